// Package kubeletstub serves the kubelet's /configz endpoint over HTTPS, and aws-node's ipamd
// /metrics over HTTP, from inside a network namespace, so that tests exercise the real node and
// pod proxies of a real kube-apiserver (/api/v1/nodes/NAME/proxy/configz,
// /api/v1/namespaces/NS/pods/NAME:PORT/proxy/metrics). The API server refuses to proxy to loopback addresses; a
// namespace joined to this machine by a veth pair gives the simulated kubelets an ordinary private
// address that both the API server (in the host namespace) and the stub (inside) can use.
//
// The namespace is created with `ip netns add`, the listeners are opened inside it by switching
// one locked OS thread into the namespace (sockets stay in the namespace they were created in),
// and everything is removed by Close. It needs root (CAP_NET_ADMIN) and iproute2; without them
// New fails with a message that says so, it never pretends to work.
package kubeletstub

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// NamePrefix starts every namespace this package creates; names end in "-<pid>-<n>" so that stale
// namespaces of dead test processes can be recognised and removed.
const NamePrefix = "nk-doc-"

var (
	counter  atomic.Int32
	ownStale sync.Once
)

// Netns is a network namespace joined to the host by a veth pair with a private /30.
type Netns struct {
	Name string
	// HostIP is the host end of the veth pair; NSIP the end inside the namespace, where the stub
	// listens and where Nodes point their InternalIP.
	HostIP, NSIP string
	hostVeth     string

	closeOnce sync.Once
	closeErr  error
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// New creates a namespace with a veth pair. Addresses come from 198.19.0.0/16 (part of the
// benchmarking range 198.18.0.0/15), one /30 per namespace, chosen so that concurrent test
// processes do not collide, and checked against the addresses already on this machine.
func New() (*Netns, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("kubeletstub: creating a network namespace needs root (CAP_NET_ADMIN); run the doctor tests as root, as CI does")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("kubeletstub: the ip command (iproute2) is not installed; it is needed to create the network namespace for the node proxy test")
	}
	if err := run("ip", "netns", "list"); err != nil {
		return nil, fmt.Errorf("kubeletstub: ip netns does not work here: %w", err)
	}
	sweepStale()
	pid := os.Getpid()
	// A namespace that already carries this process's ID was left by an earlier process that had
	// the same ID (IDs are reused, often in CI containers): this process has created none yet.
	// Once blocks concurrent first calls until the sweep is done, so it never meets one of ours.
	ownStale.Do(func() { sweepPID(pid) })
	n := int(counter.Add(1))
	used, err := addressesInUse()
	if err != nil {
		return nil, err
	}
	var host, inner string
	for try := 0; try < 64*256; try++ {
		slot := (pid*7 + n*13 + try) % (64 * 256)
		third, fourth := slot/64, (slot%64)*4
		h := fmt.Sprintf("198.19.%d.%d", third, fourth+1)
		i := fmt.Sprintf("198.19.%d.%d", third, fourth+2)
		if !used[h] && !used[i] {
			host, inner = h, i
			break
		}
	}
	if host == "" {
		return nil, errors.New("kubeletstub: no free /30 in 198.19.0.0/16")
	}
	ns := &Netns{
		Name:     fmt.Sprintf("%s%d-%d", NamePrefix, pid, n),
		HostIP:   host,
		NSIP:     inner,
		hostVeth: fmt.Sprintf("nk%dh%d", pid%100000, n%100),
	}
	nsVeth := fmt.Sprintf("nk%dn%d", pid%100000, n%100)
	steps := [][]string{
		{"ip", "netns", "add", ns.Name},
		{"ip", "link", "add", ns.hostVeth, "type", "veth", "peer", "name", nsVeth},
		{"ip", "link", "set", nsVeth, "netns", ns.Name},
		{"ip", "addr", "add", host + "/30", "dev", ns.hostVeth},
		{"ip", "link", "set", ns.hostVeth, "up"},
		{"ip", "-n", ns.Name, "addr", "add", inner + "/30", "dev", nsVeth},
		{"ip", "-n", ns.Name, "link", "set", nsVeth, "up"},
		{"ip", "-n", ns.Name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			_ = ns.Close()
			return nil, fmt.Errorf("kubeletstub: %w", err)
		}
	}
	return ns, nil
}

// addressesInUse lists the IPv4 addresses configured in this namespace.
func addressesInUse() (map[string]bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("kubeletstub: listing addresses: %w", err)
	}
	used := map[string]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			used[ipn.IP.String()] = true
		}
	}
	return used, nil
}

// sweepPID deletes the namespaces named for process pid.
func sweepPID(pid int) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	prefix := fmt.Sprintf("%s%d-", NamePrefix, pid)
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			_ = run("ip", "netns", "del", f[0])
		}
	}
}

// sweepStale deletes namespaces left by test processes that no longer exist (killed before
// their cleanup ran).
func sweepStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], NamePrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], NamePrefix)
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = run("ip", "netns", "del", f[0])
		}
	}
}

// Close deletes the namespace; the veth pair goes with it. It is safe to call more than once, and
// it succeeds when something else removed the namespace or the veth first.
func (n *Netns) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.remove(run) })
	return n.closeErr
}

// remove deletes the namespace and the host end of the veth pair with runCmd (run, or a stand-in
// in tests). It never looks before it acts: the kernel removes a namespace's devices
// asynchronously, so the host veth can vanish between any lookup and the delete, and iproute2
// words "already gone" differently depending on when it finds out ("Cannot find device" when the
// name no longer resolves, "RTNETLINK answers: No such device" when it vanished after that). A
// failed delete is judged by its result instead: if the object is gone, the goal is reached
// and the failure does not count.
func (n *Netns) remove(runCmd func(args ...string) error) error {
	var errs []error
	if err := runCmd("ip", "netns", "del", n.Name); err != nil && namespaceExists(n.Name) {
		errs = append(errs, err)
	}
	// Normally gone with its peer; a namespace that never got the peer leaves it behind.
	if err := runCmd("ip", "link", "del", n.hostVeth); err != nil && linkExists(n.hostVeth) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// namespaceExists reports whether the named namespace is still mounted. Anything but a clear
// "does not exist" counts as existing, so that an unexplained failure is reported.
func namespaceExists(name string) bool {
	_, err := os.Lstat("/run/netns/" + name)
	return !errors.Is(err, os.ErrNotExist)
}

// linkExists reports whether this namespace has a device of that name. When the devices cannot be
// listed it answers true, so that an unexplained failure is reported.
func linkExists(name string) bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return true
	}
	for _, i := range ifs {
		if i.Name == name {
			return true
		}
	}
	return false
}

// Listen opens count TCP listeners on NSIP inside the namespace (ports chosen by the kernel).
func (n *Netns) Listen(count int) ([]net.Listener, error) { return n.ListenPorts(make([]int, count)) }

// ListenPorts opens one TCP listener on NSIP inside the namespace per port given (0: a port
// chosen by the kernel), so that a stub can answer on a well-known port such as ipamd's 61678.
func (n *Netns) ListenPorts(ports []int) ([]net.Listener, error) {
	type result struct {
		ls  []net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// This goroutine's thread enters the namespace. If it cannot return to the original
		// namespace, the thread must die with the goroutine: it stays locked (no Unlock), and the
		// Go runtime terminates a thread whose goroutine exits while locked.
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("kubeletstub: %w", err)}
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + n.Name)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("kubeletstub: %w", err)}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("kubeletstub: entering %s: %w", n.Name, err)}
			return
		}
		var r result
		for i, port := range ports {
			l, err := net.Listen("tcp4", net.JoinHostPort(n.NSIP, strconv.Itoa(port)))
			if err != nil {
				r.err = fmt.Errorf("kubeletstub: listener %d in %s: %w", i, n.Name, err)
				break
			}
			r.ls = append(r.ls, l)
		}
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked so that it is discarded.
			for _, l := range r.ls {
				l.Close()
			}
			done <- result{err: fmt.Errorf("kubeletstub: leaving %s: %w", n.Name, err)}
			return
		}
		runtime.UnlockOSThread()
		if r.err != nil {
			for _, l := range r.ls {
				l.Close()
			}
			r.ls = nil
		}
		done <- r
	}()
	r := <-done
	return r.ls, r.err
}
