package kubeletstub

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRemoveJudgesFailuresByResult replays the answers iproute2 gives when the namespace or the
// host veth disappears under the delete (the CI failure: the veth vanished with its namespace
// between a lookup and "ip link del", which then said "RTNETLINK answers: No such device"). It
// needs no root: the names do not exist, except "lo", which stands for a device that is still
// there after a failed delete.
func TestRemoveJudgesFailuresByResult(t *testing.T) {
	exit2 := errors.New("exit status 2")
	exit1 := errors.New("exit status 1")
	tests := []struct {
		name      string
		hostVeth  string
		netnsErr  string // "" = success
		linkErr   string
		wantError bool
	}{
		{name: "both deleted", hostVeth: "nk-absent-h1"},
		{name: "namespace already gone, veth went with it", hostVeth: "nk-absent-h1",
			netnsErr: `Cannot remove namespace file "/run/netns/x": No such file or directory`, linkErr: `Cannot find device "nk-absent-h1"`},
		{name: "veth vanished after its name resolved", hostVeth: "nk-absent-h1",
			linkErr: "RTNETLINK answers: No such device"},
		{name: "any wording, as long as the device is gone", hostVeth: "nk-absent-h1",
			linkErr: "RTNETLINK answers: Operation not supported"},
		{name: "device still there after a failed delete", hostVeth: "lo",
			linkErr: "RTNETLINK answers: Operation not permitted", wantError: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &Netns{Name: fmt.Sprintf("%sabsent-%d", NamePrefix, os.Getpid()), hostVeth: tc.hostVeth}
			var calls []string
			err := n.remove(func(args ...string) error {
				calls = append(calls, strings.Join(args, " "))
				msg := tc.linkErr
				if args[1] == "netns" {
					msg = tc.netnsErr
				}
				if msg == "" {
					return nil
				}
				code := exit2
				if strings.HasPrefix(msg, "Cannot") {
					code = exit1
				}
				return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), code, msg)
			})
			if (err != nil) != tc.wantError {
				t.Fatalf("remove = %v, want error %v", err, tc.wantError)
			}
			// The veth is deleted without a prior lookup: a lookup is what opened the race.
			if len(calls) != 2 || !strings.HasPrefix(calls[1], "ip link del ") {
				t.Fatalf("commands = %q, want netns del then link del", calls)
			}
		})
	}
}

// TestCloseAfterNamespaceDeleted deletes the namespace behind Close's back, which makes the kernel
// remove the veth pair while Close runs, repeatedly, so that both orders of the race occur on a
// loaded machine. Close must succeed and leave neither the namespace nor the host veth.
func TestCloseAfterNamespaceDeleted(t *testing.T) {
	for i := 0; i < 15; i++ {
		ns, err := New()
		if err != nil {
			t.Fatalf("cannot create the network namespace: %v", err)
		}
		if out, err := exec.Command("ip", "netns", "del", ns.Name).CombinedOutput(); err != nil {
			_ = ns.Close()
			t.Fatalf("ip netns del %s: %v: %s", ns.Name, err, out)
		}
		if err := ns.Close(); err != nil {
			t.Fatalf("round %d: Close after the namespace was deleted: %v", i, err)
		}
		if namespaceExists(ns.Name) {
			t.Errorf("round %d: namespace %s still exists", i, ns.Name)
		}
		if _, err := net.InterfaceByName(ns.hostVeth); err == nil {
			t.Errorf("round %d: host veth %s still exists", i, ns.hostVeth)
		}
	}
}

// TestCloseReportsARealFailure: a namespace that is still there after a failed delete is an error,
// not "already gone".
func TestCloseReportsARealFailure(t *testing.T) {
	ns, err := New()
	if err != nil {
		t.Fatalf("cannot create the network namespace: %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	err = ns.remove(func(args ...string) error {
		if args[1] == "netns" {
			return errors.New("ip netns del: exit status 1: Device or resource busy")
		}
		return run(args...)
	})
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("remove with a namespace that stays = %v, want the busy error", err)
	}
}

// TestSweepPIDRemovesANamespaceLeftUnderThisProcessID: a dead process that had this process's ID
// left a namespace; New's first sweep must remove it, or "ip netns add" of the same name fails.
func TestSweepPIDRemovesANamespaceLeftUnderThisProcessID(t *testing.T) {
	name := fmt.Sprintf("%s%d-%d", NamePrefix, os.Getpid(), 90000)
	if err := run("ip", "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run("ip", "netns", "del", name) })
	sweepPID(os.Getpid())
	if namespaceExists(name) {
		t.Fatalf("namespace %s left under this process's ID survived the sweep", name)
	}
}
