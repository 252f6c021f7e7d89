//go:build linux

package e2e

import (
	"encoding/xml"
	"strings"
	"testing"
)

// doctorReport is the part of `doctor -o json` (DoctorReport) a CI job reads.
type doctorReport struct {
	Tool        string `json:"tool"`
	MaxSeverity string `json:"maxSeverity"`
	ExitCode    int    `json:"exitCode"`
	Sections    []struct {
		Name     string `json:"name"`
		Findings []struct {
			Code     string `json:"code"`
			Severity string `json:"severity"`
			Resource string `json:"resource"`
		} `json:"findings"`
	} `json:"sections"`
}

// findings maps "CODE resource" to the finding's severity.
func (r doctorReport) findings() map[string]string {
	m := map[string]string{}
	for _, s := range r.Sections {
		for _, f := range s.Findings {
			m[f.Code+" "+f.Resource] = f.Severity
		}
	}
	return m
}

func TestDoctor(t *testing.T) {
	c := seedCluster(t, 1)
	u, _ := eksUser(t)

	// A zombie kubelet is an error: exit 3 under the default --fail-on warning, and the JSON
	// report carries the same code.
	r := u.expect(exitFindings, "doctor", "-o", "json")
	rep := decode[doctorReport](t, r, "DoctorReport")
	if rep.Tool != "doctor" || rep.ExitCode != exitFindings || rep.MaxSeverity != "error" {
		t.Errorf("tool %q, exitCode %d, maxSeverity %q:\n%s", rep.Tool, rep.ExitCode, rep.MaxSeverity, r)
	}
	got := rep.findings()
	for key, severity := range map[string]string{
		"NK312 lease/kube-node-lease/" + c.zombie:    "error",   // zombie-kubelet
		"NK313 lease/kube-node-lease/" + c.leaked[0]: "warning", // leaked-lease
	} {
		if got[key] != severity {
			t.Errorf("finding %q: severity %q, want %q:\n%s", key, got[key], severity, r)
		}
	}
	for key := range got {
		if strings.Contains(key, c.healthy) && strings.HasPrefix(key, "NK31") {
			t.Errorf("the healthy lease has a heartbeat finding %q", key)
		}
	}
	mustContain(t, r, r.stderr, "error: doctor: ")

	// The text a person reads, and the gates.
	r = u.expect(exitFindings, "doctor", "--color", "always")
	mustContain(t, r, r.stdout, "NK312", c.zombie, "NK313", c.leaked[0])
	u.expect(exitOK, "doctor", "--fail-on", "none")
	r = u.expect(exitFindings, "doctor", "-o", "junit")
	var suites struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal([]byte(r.stdout), &suites); err != nil || !strings.HasPrefix(suites.XMLName.Local, "testsuite") {
		t.Errorf("-o junit is not a JUnit document (%v, root %q):\n%s", err, suites.XMLName.Local, r)
	}
	// Bad usage, before anything is read.
	u.expect(exitUsage, "doctor", "--fail-on", "sometimes")
	u.expect(exitUsage, "doctor", "--region", eksRegion) // --region needs --aws
}
