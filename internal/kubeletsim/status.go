package kubeletsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// nodeStatusUpdateRetry is the kubelet's number of attempts per status sync.
const nodeStatusUpdateRetry = 5

// syncNodeStatus is one node status sync of the kubelet: up to five attempts, the first served
// from the node informer and the others by GETs. For a kubelet whose Node was deleted this is
// the "Error updating node status, will retry" ×5 then "Unable to update node status" seen in
// real zombie kubelets' logs, with four GET nodes/<name> → 404 per sync.
func (r *instance) syncNodeStatus(ctx context.Context) {
	var err error
	for i := 0; i < nodeStatusUpdateRetry; i++ {
		if err = r.tryUpdateNodeStatus(ctx, i); err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		if i > 0 {
			r.onRepeatedHeartbeatFailure()
		}
		r.logger.Error(err, "Error updating node status, will retry")
	}
	r.logger.Error(errors.New("update node status exceeds retry count"), "Unable to update node status")
}

func (r *instance) tryUpdateNodeStatus(ctx context.Context, try int) error {
	name := r.k.cfg.Name
	var node *corev1.Node
	var err error
	if try == 0 {
		node, err = r.nodes.Get(name)
	} else {
		node, err = r.heartbeat.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", name, err)
	}
	now := time.Now()
	conditions, changed := updateConditions(node.Status.Conditions, now)
	expired := now.Sub(r.lastStatusReport) >= r.k.cfg.NodeStatusReportFrequency+r.statusDelay
	if !changed && !expired {
		return nil
	}
	// As in the kubelet: a change (or the first report after start) draws a random delay of
	// ±50 % of the report frequency so that a fleet's periodic reports do not line up.
	if changed || r.lastStatusReport.IsZero() {
		r.statusDelay = time.Duration(float64(r.k.cfg.NodeStatusReportFrequency) * (rand.Float64() - 0.5))
	} else {
		r.statusDelay = 0
	}
	updated := node.DeepCopy()
	updated.Status.Conditions = conditions
	patch, err := statusPatch(node, updated)
	if err != nil {
		return err
	}
	if _, err := r.heartbeat.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status"); err != nil {
		return fmt.Errorf("failed to patch status of node %q: %w", name, err)
	}
	r.lastStatusReport = now
	return nil
}

// statusPatch is the kubelet's node status patch (component-helpers' node util does the same):
// a two-way strategic merge patch from the node it read to the node it wants, status only.
func statusPatch(oldNode, newNode *corev1.Node) ([]byte, error) {
	oldData, err := json.Marshal(oldNode)
	if err != nil {
		return nil, err
	}
	diff := newNode.DeepCopy()
	diff.Spec = oldNode.Spec
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("create status patch for node %q: %w", oldNode.Name, err)
	}
	return patch, nil
}
