// Package controlplane runs a real, throw-away Kubernetes control plane on 127.0.0.1: etcd,
// kube-apiserver and (optionally) kube-controller-manager with its garbage collector and node
// lifecycle controller. `nodekeeper sandbox` runs its simulated kubelets against it, and the tests
// (through internal/test/testenv, which adds their TestMain and fixtures) check every claim about API
// behaviour — create-on-update, delete preconditions, owner-reference garbage collection, RBAC,
// audit events — against the components that implement it, not against a fake.
//
// The package is product code: it imports no testing package, so the shipped binary carries
// only what the sandbox needs. The binaries come from hack/build-controlplane.sh in a checkout,
// or from the release's control-plane archive (see BinDir). Every process runs in its own
// process group with a parent-death signal, and Stop removes the temporary directory, so a run
// leaves nothing behind even when it fails.
package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// Options selects what runs beside etcd and kube-apiserver.
type Options struct {
	// ControllerManager also starts kube-controller-manager with the garbagecollector and
	// nodelifecycle controllers. It uses per-controller service account credentials, so the
	// garbage collector acts as system:serviceaccount:kube-system:generic-garbage-collector, as
	// it does on EKS.
	ControllerManager bool
	// ControllerManagerArgs are extra flags, appended last so they override the defaults
	// (for example "--leader-elect=true" or "--node-monitor-grace-period=20s").
	ControllerManagerArgs []string
	// APIServerArgs are extra kube-apiserver flags, appended last.
	APIServerArgs []string
	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy in YAML; the API server then writes
	// one JSON audit event per line to AuditLogPath.
	AuditPolicy string
	// EgressAllowed are the networks the API server may connect to when it proxies to a node
	// (node proxy, logs, exec); nil means DefaultEgressAllowed. Every other destination is refused.
	EgressAllowed []netip.Prefix
	// KeepHistory turns off the API server's etcd compaction, so that every version of every
	// object stays readable at its revision (StoredAt, Deletions): a proof can then read what
	// existed at any moment even where the audit log has no event for it.
	KeepHistory bool
	// StartTimeout bounds the whole start; zero means five minutes. A start takes seconds on an
	// idle machine, but two minutes were seen to run out at a load average of 25 (tests and
	// benchmarks beside it), with the API server's TLS handshakes timing out: the bound is
	// there for a start that will never finish, not to fail a slow one.
	StartTimeout time.Duration
	// BinDir is the directory of etcd, kube-apiserver and kube-controller-manager; "" searches
	// the places BinDir lists.
	BinDir string
}

// Env is one running control plane.
type Env struct {
	dir      string
	binDir   string
	ca       *authority
	caFile   string
	apiPort  int
	etcdURL  string
	audit    string
	etcd     *process
	api      *process
	kcm      *process
	admin    *rest.Config
	egress   *egressGuard
	stopOnce sync.Once

	mu        sync.Mutex
	userCerts map[string][2][]byte
}

// Start brings up a control plane in a new temporary directory and waits until it serves.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if err := Supported(); err != nil {
		return nil, err
	}
	binDir, err := BinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nodekeeper-controlplane-")
	if err != nil {
		return nil, err
	}
	e := &Env{dir: dir, binDir: binDir, userCerts: map[string][2][]byte{}}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.ca, err = newAuthority(); err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := e.configureAPIServer(opts); err != nil {
		return nil, err
	}
	if err := e.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := e.WriteKubeconfig(e.KubeconfigPath(), e.AdminConfig()); err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		if err := e.startControllerManager(ctx, opts.ControllerManagerArgs); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) path(name string) string { return filepath.Join(e.dir, name) }

func (e *Env) writeFile(name string, data []byte) (string, error) {
	p := e.path(name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return "", err
	}
	return p, nil
}

func (e *Env) startEtcd(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	e.etcdURL = client
	e.etcd = &process{
		name:    "etcd",
		bin:     filepath.Join(e.binDir, "etcd"),
		logPath: e.path("etcd.log"),
		args: []string{
			"--name=testenv",
			"--data-dir=" + e.path("etcd-data"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=testenv=" + peer,
			// Tests never need durability; fsync dominates etcd's cost on a shared disk.
			"--unsafe-no-fsync",
			"--quota-backend-bytes=" + strconv.Itoa(8<<30),
			"--log-level=warn",
		},
	}
	if err := e.etcd.start(); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return e.waitFor(ctx, e.etcd, "etcd", func() bool {
		resp, err := hc.Get(client + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// issueFiles issues a certificate for cn (see authority.issue) and writes it and its key to
// NAME.crt and NAME.key in the environment's directory.
func (e *Env) issueFiles(name, cn string, groups []string, serving bool) (certFile, keyFile string, err error) {
	cert, key, err := e.ca.issue(cn, groups, serving)
	if err != nil {
		return "", "", err
	}
	if certFile, err = e.writeFile(name+".crt", cert); err != nil {
		return "", "", err
	}
	if keyFile, err = e.writeFile(name+".key", key); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func (e *Env) configureAPIServer(opts Options) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	e.apiPort = ports[0]
	if e.caFile, err = e.writeFile("ca.crt", e.ca.certPEM); err != nil {
		return err
	}
	certFile, keyFile, err := e.issueFiles("apiserver", "kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	// The API server authenticates to kubelets (node proxy, logs, exec) with this identity.
	kcCertFile, kcKeyFile, err := e.issueFiles("kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	allowed := opts.EgressAllowed
	if allowed == nil {
		allowed = DefaultEgressAllowed
	}
	socket := e.path("egress.sock")
	if e.egress, err = startEgressGuard(socket, allowed); err != nil {
		return err
	}
	egressConfig, err := e.writeFile("egress-selector.yaml", []byte(egressSelectorConfig(socket)))
	if err != nil {
		return err
	}
	saKey := e.path("sa.key")
	if err := writeServiceAccountKey(saKey); err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + e.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(e.apiPort),
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--client-ca-file=" + e.caFile,
		"--authorization-mode=Node,RBAC",
		// EKS enables NodeRestriction: a kubelet may only write its own Node and Lease.
		"--enable-admission-plugins=NodeRestriction",
		// As on EKS (and kubeadm): the VPC CNI's stock aws-node DaemonSet runs privileged
		// containers, and tests create it exactly as its upstream manifest ships it.
		"--allow-privileged=true",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--kubelet-client-certificate=" + kcCertFile,
		"--kubelet-client-key=" + kcKeyFile,
		// Only IP addresses: a host name would make the API server resolve EKS-style names.
		"--kubelet-preferred-address-types=InternalIP",
		"--egress-selector-config-file=" + egressConfig,
		"--profiling=false",
		"--goaway-chance=0",
		"--cert-dir=" + e.path("apiserver-certs"),
	}
	if opts.AuditPolicy != "" {
		policy, err := e.writeFile("audit-policy.yaml", []byte(opts.AuditPolicy))
		if err != nil {
			return err
		}
		e.audit = e.path("audit.log")
		args = append(args,
			"--audit-policy-file="+policy,
			"--audit-log-path="+e.audit,
			"--audit-log-format=json",
			"--audit-log-maxsize=0",
			"--audit-log-maxbackup=0",
		)
	}
	if opts.KeepHistory {
		args = append(args, "--etcd-compaction-interval=0")
	}
	args = append(args, opts.APIServerArgs...)
	e.api = &process{
		name:    "kube-apiserver",
		bin:     filepath.Join(e.binDir, "kube-apiserver"),
		logPath: e.path("kube-apiserver.log"),
		args:    args,
	}
	adminCert, adminKey, err := e.ca.issue("nodekeeper-admin", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	e.admin = &rest.Config{
		Host: e.APIServerURL(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.ca.certPEM,
			CertData: adminCert,
			KeyData:  adminKey,
		},
		QPS:   -1, // tests set up thousands of objects; client-side throttling only slows them
		Burst: 0,
	}
	return nil
}

func (e *Env) startAPIServer(ctx context.Context) error {
	if err := e.api.start(); err != nil {
		return err
	}
	client, err := e.adminCore()
	if err != nil {
		return err
	}
	if err := e.waitFor(ctx, e.api, "kube-apiserver /readyz", func() bool {
		body, err := client.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok"
	}); err != nil {
		return err
	}
	// The system namespaces controller creates kube-node-lease shortly after /readyz.
	return e.waitFor(ctx, e.api, "namespace kube-node-lease", func() bool {
		_, err := client.Namespaces().Get(ctx, corev1.NamespaceNodeLease, metav1.GetOptions{})
		return err == nil
	})
}

func (e *Env) startControllerManager(ctx context.Context, extra []string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	cert, key, err := e.ca.issue("system:kube-controller-manager", nil, false)
	if err != nil {
		return err
	}
	cfg := e.AdminConfig()
	cfg.CertData, cfg.KeyData = cert, key
	kubeconfig := e.path("kube-controller-manager.kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig, cfg); err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=garbagecollector,nodelifecycle",
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + e.path("kcm-certs"),
		"--profiling=false",
	}
	args = append(args, extra...)
	e.kcm = &process{
		name:    "kube-controller-manager",
		bin:     filepath.Join(e.binDir, "kube-controller-manager"),
		logPath: e.path("kube-controller-manager.log"),
		args:    args,
	}
	if err := e.kcm.start(); err != nil {
		return err
	}
	hc := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed, loopback only
	}
	return e.waitFor(ctx, e.kcm, "kube-controller-manager /healthz", func() bool {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0]))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls ready until it holds, the process exits, or ctx ends.
func (e *Env) waitFor(ctx context.Context, p *process, what string, ready func() bool) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, p.exitError()
		}
		return ready(), nil
	})
	if err != nil {
		if p.exited() {
			return fmt.Errorf("waiting for %s: %w", what, p.exitError())
		}
		return fmt.Errorf("waiting for %s: %w; last log lines:\n%s", what, err, p.logTail(20))
	}
	return nil
}

// Stop kills every process and removes the directory. It is safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		for _, p := range []*process{e.kcm, e.api, e.etcd} {
			if p == e.api {
				e.stopAPIServer()
			} else if p != nil {
				p.stop(10 * time.Second)
			}
		}
		if e.egress != nil {
			e.egress.close()
		}
		if e.dir != "" {
			_ = os.RemoveAll(e.dir)
		}
	})
}

// RefusedEgress lists the host:port targets the API server tried to reach outside EgressAllowed
// (each refused without a packet sent), so tests can assert that nothing tried to leave.
func (e *Env) RefusedEgress() []string { return e.egress.refusedTargets() }

// PIDs returns the process IDs of the running components (for leak checks).
func (e *Env) PIDs() []int {
	var pids []int
	for _, p := range []*process{e.etcd, e.api, e.kcm} {
		if p != nil && p.pid() != 0 {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// Dir is the temporary directory holding certificates, data and component logs.
func (e *Env) Dir() string { return e.dir }

// APIServerURL is https://127.0.0.1:<port>.
func (e *Env) APIServerURL() string { return fmt.Sprintf("https://127.0.0.1:%d", e.apiPort) }

// AuditLogPath is the JSON-lines audit log, or "" when Options.AuditPolicy was empty.
func (e *Env) AuditLogPath() string { return e.audit }

// KubeconfigPath is an admin kubeconfig usable with kubectl --kubeconfig.
func (e *Env) KubeconfigPath() string { return e.path("admin.kubeconfig") }

// ComponentLog returns the log of "etcd", "kube-apiserver" or "kube-controller-manager".
func (e *Env) ComponentLog(name string) string {
	data, _ := os.ReadFile(e.path(name + ".log"))
	return string(data)
}

// AdminConfig returns a fresh copy of a system:masters client configuration.
func (e *Env) AdminConfig() *rest.Config { return rest.CopyConfig(e.admin) }

// adminCore is the core group's client with the admin identity. The control plane hands out no
// whole clientset (the tests' harness does, testenv.Env.AdminClient): it runs in the CLI
// (sandbox), where one would keep every API group's typed client in the binary (see
// internal/kube's Interface).
func (e *Env) adminCore() (*corev1client.CoreV1Client, error) {
	return corev1client.NewForConfig(e.AdminConfig())
}

// UserConfig returns a client configuration that authenticates as user in groups with a client
// certificate, exactly as a kubelet ("system:node:<name>", "system:nodes") or any human user would.
// Certificates are cached per identity, so calling it for thousands of kubelets stays cheap.
func (e *Env) UserConfig(user string, groups ...string) *rest.Config {
	key := user + "\x00" + fmt.Sprint(groups)
	e.mu.Lock()
	pair, ok := e.userCerts[key]
	e.mu.Unlock()
	if !ok {
		cert, k, err := e.ca.issue(user, groups, false)
		if err != nil {
			panic(fmt.Sprintf("controlplane: issue client certificate for %q: %v", user, err)) // crypto/rand failure only
		}
		pair = [2][]byte{cert, k}
		e.mu.Lock()
		e.userCerts[key] = pair
		e.mu.Unlock()
	}
	cfg := e.AdminConfig()
	cfg.CertData, cfg.KeyData = pair[0], pair[1]
	return cfg
}

// ServiceAccountConfig returns a client configuration for namespace/name with a bound token from
// the TokenRequest API, creating the namespace and the ServiceAccount when they are missing.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	client, err := e.adminCore()
	if err != nil {
		return nil, err
	}
	_, err = client.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	_, err = client.ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create service account %s/%s: %w", namespace, name, err)
	}
	tr, err := client.ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for %s/%s: %w", namespace, name, err)
	}
	cfg := e.AdminConfig()
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// WriteKubeconfig writes cfg as a self-contained kubeconfig file.
func (e *Env) WriteKubeconfig(path string, cfg *rest.Config) error {
	return clientcmd.WriteToFile(*kubeconfigFor(cfg), path)
}

// Kubeconfig returns cfg as a kubeconfig file's content (client key included: keep it private).
func (e *Env) Kubeconfig(cfg *rest.Config) ([]byte, error) {
	return clientcmd.Write(*kubeconfigFor(cfg))
}

func kubeconfigFor(cfg *rest.Config) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["nodekeeper-sandbox"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["nodekeeper-sandbox"] = &clientcmdapi.Context{Cluster: "nodekeeper-sandbox", AuthInfo: "user"}
	kc.CurrentContext = "nodekeeper-sandbox"
	return kc
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port and storage, for
// tests of clients that must ride out an API server restart.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	e.stopAPIServer()
	return e.startAPIServer(ctx)
}

// StopAPIServer stops kube-apiserver without restarting it (for unreachable-server tests);
// StartAPIServer brings it back.
func (e *Env) StopAPIServer() { e.stopAPIServer() }

// apiServerStopGrace is how long a stopping API server may take before it is killed. On SIGTERM
// it refuses new requests and lets those in flight finish (each within its 60 s request timeout),
// writing their audit events, and only then exits. Killing it sooner loses the audit events of
// writes it has already committed to etcd; on a quiet machine it exits within seconds anyway.
const apiServerStopGrace = 90 * time.Second

func (e *Env) stopAPIServer() {
	if e.api != nil {
		e.api.stop(apiServerStopGrace)
	}
}

// StartAPIServer starts a stopped kube-apiserver again and waits until it is ready.
func (e *Env) StartAPIServer(ctx context.Context) error {
	if !e.api.exited() {
		return errors.New("kube-apiserver is already running")
	}
	return e.startAPIServer(ctx)
}

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
