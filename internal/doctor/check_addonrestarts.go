package doctor

import "fmt"

// addonRestartsCheck reports the add-on pods whose containers restart (a termination within
// AddonRestartWindow, or CrashLoopBackOff), grouped by container, last termination reason and
// exit code.
type addonRestartsCheck struct{}

func (addonRestartsCheck) Needs() []Need {
	return []Need{{Fact: FactAddons, Rule: RuleAddonRestarts}, {Fact: FactAddonPods, Rule: RuleAddonRestarts}}
}

func (addonRestartsCheck) Run(f *Facts) Result {
	var r Result
	// The add-ons are counted once, by addonAvailabilityCheck.
	for _, a := range installedAddons(f) {
		if a.Restarting == 0 {
			continue
		}
		fd := RuleAddonRestarts.New(a.Resource, "%d of %d %s pods restarting (a container terminated in the last hour or waits in CrashLoopBackOff)",
			a.Restarting, a.Pods, a.Name)
		for _, g := range a.Restarts {
			last := "no termination recorded"
			if !g.Last.IsZero() {
				last = "last " + age(f.Now, g.Last) + " ago"
			}
			what := fmt.Sprintf("container %s: last terminated %s, exit code %d", g.Container, g.Reason, g.ExitCode)
			if g.Other {
				what = "other containers, reasons and exit codes"
			}
			fd = fd.WithEvidence(fmt.Sprintf("%s: %s, %s, %s", what, plural(g.Pods, "pod"), plural(int(g.Restarts), "restart"), last))
			for _, ex := range g.Examples {
				fd = fd.WithEvidence("  " + ex)
			}
		}
		r.add(fd)
	}
	return r
}
