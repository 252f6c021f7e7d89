package kube

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coordinationv1alpha2 "k8s.io/client-go/kubernetes/typed/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	flowcontrolv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	storagev1 "k8s.io/client-go/kubernetes/typed/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the part of client-go's typed clientset nodekeeper uses: the API groups it reads
// or writes, and discovery. *kubernetes.Clientset and the fake clientset satisfy it, so tests
// hand either in.
//
// Why not kubernetes.Interface: the CLI links text/template (-o go-template) and html/template
// (the HTML reports), whose method lookup by name makes the linker keep every exported method
// of every type stored in an interface. A *kubernetes.Clientset stored anywhere keeps the typed
// client of every API group (with their apply configurations, informers and listers reachable
// from them), about 10 MB of the CLI. A Clientset built by NewForConfig holds only these groups.
type Interface interface {
	Discovery() discovery.DiscoveryInterfaces
	AppsV1() appsv1.AppsV1Interface
	AuthenticationV1() authenticationv1.AuthenticationV1Interface
	AuthorizationV1() authorizationv1.AuthorizationV1Interface
	CertificatesV1() certificatesv1.CertificatesV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	CoordinationV1beta1() coordinationv1beta1.CoordinationV1beta1Interface
	CoordinationV1alpha2() coordinationv1alpha2.CoordinationV1alpha2Interface
	CoreV1() corev1.CoreV1Interface
	EventsV1() eventsv1.EventsV1Interface
	FlowcontrolV1() flowcontrolv1.FlowcontrolV1Interface
	StorageV1() storagev1.StorageV1Interface
}

// Clientset is Interface's typed clients sharing one HTTP client and one client-side rate
// limiter, as kubernetes.NewForConfig shares them across its groups.
type Clientset struct {
	discovery            *discovery.DiscoveryClient
	apps                 *appsv1.AppsV1Client
	authentication       *authenticationv1.AuthenticationV1Client
	authorization        *authorizationv1.AuthorizationV1Client
	certificates         *certificatesv1.CertificatesV1Client
	coordination         *coordinationv1.CoordinationV1Client
	coordinationV1beta1  *coordinationv1beta1.CoordinationV1beta1Client
	coordinationV1alpha2 *coordinationv1alpha2.CoordinationV1alpha2Client
	core                 *corev1.CoreV1Client
	events               *eventsv1.EventsV1Client
	flowcontrol          *flowcontrolv1.FlowcontrolV1Client
	storage              *storagev1.StorageV1Client
}

var _ Interface = (*Clientset)(nil)

// NewForConfig builds a Clientset from c as kubernetes.NewForConfig builds its own: client-go's
// default user agent when c has none, one transport for every group. Building it sends no
// request.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, httpClient)
}

// NewForConfigAndClient builds a Clientset over httpClient, with one token-bucket rate limiter
// from c's QPS and Burst shared by every group (none when QPS is not positive), as
// kubernetes.NewForConfigAndClient does.
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Clientset, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst must be greater than 0 when QPS is greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var cs Clientset
	var err error
	build := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	build(func() (e error) {
		cs.discovery, e = discovery.NewDiscoveryClientForConfigAndClient(&cfg, httpClient)
		return
	})
	build(func() (e error) { cs.apps, e = appsv1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) {
		cs.authentication, e = authenticationv1.NewForConfigAndClient(&cfg, httpClient)
		return
	})
	build(func() (e error) {
		cs.authorization, e = authorizationv1.NewForConfigAndClient(&cfg, httpClient)
		return
	})
	build(func() (e error) { cs.certificates, e = certificatesv1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) { cs.coordination, e = coordinationv1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) {
		cs.coordinationV1beta1, e = coordinationv1beta1.NewForConfigAndClient(&cfg, httpClient)
		return
	})
	build(func() (e error) {
		cs.coordinationV1alpha2, e = coordinationv1alpha2.NewForConfigAndClient(&cfg, httpClient)
		return
	})
	build(func() (e error) { cs.core, e = corev1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) { cs.events, e = eventsv1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) { cs.flowcontrol, e = flowcontrolv1.NewForConfigAndClient(&cfg, httpClient); return })
	build(func() (e error) { cs.storage, e = storagev1.NewForConfigAndClient(&cfg, httpClient); return })
	if err != nil {
		return nil, err
	}
	return &cs, nil
}

func (c *Clientset) Discovery() discovery.DiscoveryInterfaces { return c.discovery }
func (c *Clientset) AppsV1() appsv1.AppsV1Interface           { return c.apps }
func (c *Clientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return c.authentication
}
func (c *Clientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.authorization
}
func (c *Clientset) CertificatesV1() certificatesv1.CertificatesV1Interface { return c.certificates }
func (c *Clientset) CoordinationV1() coordinationv1.CoordinationV1Interface { return c.coordination }
func (c *Clientset) CoordinationV1beta1() coordinationv1beta1.CoordinationV1beta1Interface {
	return c.coordinationV1beta1
}
func (c *Clientset) CoordinationV1alpha2() coordinationv1alpha2.CoordinationV1alpha2Interface {
	return c.coordinationV1alpha2
}
func (c *Clientset) CoreV1() corev1.CoreV1Interface                      { return c.core }
func (c *Clientset) EventsV1() eventsv1.EventsV1Interface                { return c.events }
func (c *Clientset) FlowcontrolV1() flowcontrolv1.FlowcontrolV1Interface { return c.flowcontrol }
func (c *Clientset) StorageV1() storagev1.StorageV1Interface             { return c.storage }
