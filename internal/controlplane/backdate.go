package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// BackdatedAnnotation marks a lease whose creationTimestamp BackdateLease rewrote; its value is
// the creation time it was given.
const BackdatedAnnotation = "controlplane.nodekeeper.io/backdated"

// BackdateLease sets the creationTimestamp of an existing lease to created, as if the lease had
// been written back then, and returns the lease as the API server now serves it.
//
// The API server stamps creationTimestamp itself and ignores what a client sends, so a test
// cannot otherwise make an old object: a lease created now with an old renewTime is, correctly,
// only as old as its creation (see internal/lease). The object is rewritten in etcd (kube-apiserver
// reads JSON from its storage as well as protobuf) in a transaction that succeeds only if the
// lease is still at the revision that was read, so a concurrent writer is never overwritten; the
// API server's watch delivers the change to informers as an update.
func (e *Env) BackdateLease(ctx context.Context, namespace, name string, created time.Time) (*coordinationv1.Lease, error) {
	coordination, err := coordinationv1client.NewForConfig(e.AdminConfig())
	if err != nil {
		return nil, err
	}
	leases := coordination.Leases(namespace)
	for attempt := 0; attempt < 5; attempt++ {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("backdate lease %s/%s: %w", namespace, name, err)
		}
		rev, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("backdate lease %s/%s: resourceVersion %q is not an etcd revision: %w", namespace, name, l.ResourceVersion, err)
		}
		stored := l.DeepCopy()
		stored.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
		stored.ResourceVersion = "" // never stored: the API server derives it from the etcd revision
		stored.CreationTimestamp = metav1.NewTime(created)
		// The version written behind the API server's back must not be one anybody acts on: it
		// is not in the audit log. It carries a fresh renewTime (a controller sees a renewed
		// lease); the audited write below restores the real one.
		now := metav1.NewMicroTime(time.Now())
		stored.Spec.RenewTime = &now
		value, err := json.Marshal(stored)
		if err != nil {
			return nil, err
		}
		key := LeaseKey(namespace, name)
		ok, err := e.etcdPutIfUnchanged(ctx, key, value, rev)
		if err != nil {
			return nil, fmt.Errorf("backdate lease %s/%s: %w", namespace, name, err)
		}
		if !ok {
			continue // written in between: read it again
		}
		// Write the result once more through the API server (the real renewTime, and an
		// annotation saying what was done), so that the version tests go on with is an audited
		// write like every other: audit-log proofs find the lease as it is then, with its old
		// creation time.
		written, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("backdate lease %s/%s: %w", namespace, name, err)
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"annotations":     map[string]string{BackdatedAnnotation: created.UTC().Format(time.RFC3339)},
				"resourceVersion": written.ResourceVersion,
			},
			"spec": map[string]any{"renewTime": l.Spec.RenewTime},
		})
		if err != nil {
			return nil, err
		}
		got, err := leases.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "nodekeeper-controlplane"})
		if apierrors.IsConflict(err) {
			continue // written in between: start again
		}
		if err != nil {
			return nil, fmt.Errorf("backdate lease %s/%s: %w", namespace, name, err)
		}
		if !got.CreationTimestamp.Time.Equal(created.Truncate(time.Second)) {
			return nil, fmt.Errorf("backdate lease %s/%s: the API server serves creationTimestamp %s, want %s",
				namespace, name, got.CreationTimestamp.UTC().Format(time.RFC3339), created.UTC().Format(time.RFC3339))
		}
		return got, nil
	}
	return nil, fmt.Errorf("backdate lease %s/%s: the lease kept changing; is something renewing it?", namespace, name)
}

// etcdPutIfUnchanged writes value at key if the key's last modification is still revision rev,
// through etcd's JSON gateway. It reports whether the write happened.
func (e *Env) etcdPutIfUnchanged(ctx context.Context, key string, value []byte, rev int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out struct {
		Succeeded bool `json:"succeeded"`
	}
	err := e.etcdCall(ctx, "/v3/kv/txn", map[string]any{
		"compare": []map[string]any{{"key": []byte(key), "target": "MOD", "result": "EQUAL", "mod_revision": strconv.FormatInt(rev, 10)}},
		"success": []map[string]any{{"request_put": map[string]any{"key": []byte(key), "value": value}}},
	}, &out)
	return out.Succeeded, err
}

// BackdateIfOld gives a lease meant to be old the creation time a kubelet's first renewal would
// have given it: a lease renewed more than half an hour ago is backdated to its renewTime; a newer
// one is returned as it is. An owned lease is never backdated: its creation decides nothing (it
// is never leaked), and the garbage collector may remove one whose owner is gone before it could
// be rewritten.
func (e *Env) BackdateIfOld(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) < 30*time.Minute || len(l.OwnerReferences) > 0 {
		return l, nil
	}
	return e.BackdateLease(ctx, l.Namespace, l.Name, l.Spec.RenewTime.Time)
}
