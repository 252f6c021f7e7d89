package kubeletsim

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is the part of client-go's typed clientset the simulated kubelets and their fixtures
// use. *kubernetes.Clientset and the fake clientset satisfy it, so tests hand either in.
// NewClient builds one holding only these two groups: the CLI runs the kubelets (`sandbox`) and
// links text/template, whose method lookup by name keeps every exported method of a type stored
// in an interface, so a whole clientset would keep every API group's typed client in the binary.
type Client interface {
	CoreV1() corev1client.CoreV1Interface
	CoordinationV1() coordinationv1client.CoordinationV1Interface
}

type client struct {
	core         *corev1client.CoreV1Client
	coordination *coordinationv1client.CoordinationV1Client
}

func (c *client) CoreV1() corev1client.CoreV1Interface { return c.core }
func (c *client) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return c.coordination
}

// NewClient builds a Client from cfg over httpClient (nil: one built from cfg), both groups
// sharing one client-side rate limiter when cfg's QPS is positive, as kubernetes.NewForConfig
// shares it across its groups.
func NewClient(cfg *rest.Config, httpClient *http.Client) (Client, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(&c); err != nil {
			return nil, err
		}
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("kubeletsim: burst must be greater than 0 when QPS is greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	core, err := corev1client.NewForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, err
	}
	return &client{core: core, coordination: coordination}, nil
}

// newNodeInformer is one informer of the Nodes matching fieldSelector, listed and watched through
// c: what client-go's generated Node informer builds, without a SharedInformerFactory (whose
// ForResource links every API group's informer and lister) or a whole clientset.
func newNodeInformer(c Client, fieldSelector string) cache.SharedIndexInformer {
	tweak := func(o metav1.ListOptions) metav1.ListOptions {
		o.FieldSelector = fieldSelector
		return o
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, tweak(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Nodes().Watch(ctx, tweak(o))
		},
	}
	// c goes to the reflector too: it asks whether the client supports watch-list semantics.
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c), &corev1.Node{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
}

// leaseOnly hands the upstream lease controller, which takes a whole kubernetes.Interface but
// reads only its CoordinationV1, the kubelet's Client; any other group is a nil interface.
type leaseOnly struct {
	kubernetes.Interface
	c Client
}

func (l leaseOnly) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return l.c.CoordinationV1()
}
