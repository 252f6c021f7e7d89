package kubeletsim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file writes what a kubelet reports about the pods bound to its node — pod status and
// sandbox failure events — so that checks that read pods and events (nodekeeper doctor's pod
// networking section) are tested against objects the API server stored, without a scheduler or
// a container runtime.

// PodFieldManager is the field manager of the objects written here.
const PodFieldManager = "kubeletsim"

// EnsureNamespace creates a namespace and its default ServiceAccount (the ServiceAccount
// admission plugin wants one, and no controller creates it in the test control plane).
func EnsureNamespace(ctx context.Context, c Client, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{FieldManager: PodFieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = c.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{FieldManager: PodFieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// PodSpec describes one pod bound to a simulated node.
type PodSpec struct {
	Namespace, Name, Node string
	// HostNetwork pods use the node's address.
	HostNetwork bool
	// Labels of the pod.
	Labels map[string]string
	// ScheduledAt is when the pod was bound (the PodScheduled condition); zero means now.
	ScheduledAt time.Time
}

// podImage is the image of the simulated pods' one container; nothing pulls it.
const podImage = "public.ecr.aws/docker/library/busybox:1.36"

func (p PodSpec) pod() *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
		Spec: corev1.PodSpec{
			NodeName:                     p.Node,
			HostNetwork:                  p.HostNetwork,
			AutomountServiceAccountToken: &no,
			Containers:                   []corev1.Container{{Name: "app", Image: podImage}},
		},
	}
}

func (p PodSpec) scheduled() metav1.Time {
	if p.ScheduledAt.IsZero() {
		return metav1.Now()
	}
	return metav1.NewTime(p.ScheduledAt)
}

// CreateRunningPod creates a pod on its node and reports it Running with address ip, as the
// kubelet does once the sandbox and containers started.
func CreateRunningPod(ctx context.Context, c Client, p PodSpec, ip string) (*corev1.Pod, error) {
	return createReporting(ctx, c, p, func(at metav1.Time) corev1.PodStatus {
		return corev1.PodStatus{
			Phase:     corev1.PodRunning,
			PodIP:     ip,
			PodIPs:    []corev1.PodIP{{IP: ip}},
			StartTime: &at,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: podImage, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
			}},
		}
	})
}

// CreateStuckPod creates a pod on its node and reports it the way the kubelet does while the
// sandbox cannot be created: phase Pending, no address, every container waiting with reason
// ContainerCreating.
func CreateStuckPod(ctx context.Context, c Client, p PodSpec) (*corev1.Pod, error) {
	return createReporting(ctx, c, p, func(at metav1.Time) corev1.PodStatus {
		return corev1.PodStatus{
			Phase:     corev1.PodPending,
			StartTime: &at,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: at},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: podImage,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			}},
		}
	})
}

// createReporting creates p's pod, then writes the status the kubelet reports for it; status gets
// the time the pod was scheduled.
func createReporting(ctx context.Context, c Client, p PodSpec, status func(scheduled metav1.Time) corev1.PodStatus) (*corev1.Pod, error) {
	created, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p.pod(), metav1.CreateOptions{FieldManager: PodFieldManager})
	if err != nil {
		return nil, err
	}
	created.Status = status(p.scheduled())
	return c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: PodFieldManager})
}

// RecordSandboxFailure writes the kubelet's FailedCreatePodSandBox event for a pod: a Warning
// from source kubelet on the node, aggregated count times between first and last.
func RecordSandboxFailure(ctx context.Context, c Client, pod *corev1.Pod, message string, count int32, first, last time.Time) (*corev1.Event, error) {
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", pod.Name, last.UnixNano()),
			Namespace: pod.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1", ResourceVersion: pod.ResourceVersion,
		},
		Reason:              "FailedCreatePodSandBox",
		Message:             message,
		Source:              corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp:      metav1.NewTime(first),
		LastTimestamp:       metav1.NewTime(last),
		Count:               count,
		Type:                corev1.EventTypeWarning,
		ReportingController: "kubelet",
		ReportingInstance:   pod.Spec.NodeName,
	}
	return c.CoreV1().Events(pod.Namespace).Create(ctx, e, metav1.CreateOptions{FieldManager: PodFieldManager})
}
