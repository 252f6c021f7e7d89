package explain

import (
	"fmt"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/bundle"
)

// readBundles reads each --bundle with internal/bundle, refuses one that is not this node's
// (naming both), and joins its boot to the timeline (the two moments of NK622: the boot and
// ipamd's first connection refused after it) and its findings to the node's.
func (t *teller) readBundles() error {
	for _, file := range t.o.Bundles {
		rep, st, err := bundle.AnalyzeFileStory(file, bundle.Options{Now: t.now})
		if err != nil {
			return fmt.Errorf("--bundle %s: %w", file, err)
		}
		if err := t.matchBundle(file, st); err != nil {
			return err
		}
		t.stories = append(t.stories, st)
		where := func(l *bundle.StoryLine) string { return st.Name + " " + l.Where }
		if l := st.Boot; l != nil {
			t.add(l.Time, SourceBundle, where(l), "%s", l.What)
		}
		if l := st.FirstRefused; l != nil {
			t.add(l.Time, SourceBundle, where(l), "%s", l.What)
		}
		for _, f := range rep.Findings() {
			t.fs = append(t.fs, f)
		}
	}
	return nil
}

// matchBundle accepts a bundle of this node: its instance ID is the node's, or the host its
// kubelet's journal names is the node's name or private DNS name.
func (t *teller) matchBundle(file string, st *bundle.Story) error {
	tg := t.s.Target
	var names []string
	for _, n := range []string{tg.Node, t.privateDNS()} {
		if n != "" {
			names = append(names, n)
		}
	}
	if st.InstanceID != "" && tg.InstanceID != "" && st.InstanceID == tg.InstanceID {
		return nil
	}
	for _, n := range names {
		if st.Hostname != "" && sameHost(st.Hostname, n) {
			return nil
		}
	}
	var whose []string
	if st.InstanceID != "" {
		whose = append(whose, "instance "+st.InstanceID)
	}
	if st.Hostname != "" {
		whose = append(whose, "host "+st.Hostname)
	}
	this := "node " + orNone(tg.Node)
	if tg.InstanceID != "" {
		this += " (instance " + tg.InstanceID + ")"
	}
	if len(whose) == 0 {
		return fmt.Errorf("%w: --bundle %s names no instance (system/instance-id.txt) and no host (the kubelet journal): it cannot be told to be %s's", ErrBundle, file, this)
	}
	return fmt.Errorf("%w: --bundle %s is of %s, not of %s", ErrBundle, file, strings.Join(whose, ", "), this)
}

// privateDNS is the instance's private DNS name, when EC2 described it.
func (t *teller) privateDNS() string {
	if t.inst == nil {
		return ""
	}
	return deref(t.inst.i.PrivateDnsName)
}

// sameHost compares host names, a short name (ip-10-0-1-2) with a full one by its first label.
func sameHost(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	if !strings.Contains(a, ".") || !strings.Contains(b, ".") {
		fa, _, _ := strings.Cut(a, ".")
		fb, _, _ := strings.Cut(b, ".")
		return strings.EqualFold(fa, fb)
	}
	return false
}
