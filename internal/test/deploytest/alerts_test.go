package deploytest

import (
	"slices"
	"sort"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// alertTests are the rule unit tests of the alerts, in promtool's format.
const alertTests = "internal/test/deploytest/testdata/alerts.test.yaml"

// buildPromtool builds bin/promtool once per test binary by hack/build-promtool.sh from the
// Prometheus module pinned in tools/promtool/go.mod (a warm run only checks the stamp).
var buildPromtool = sync.OnceValues(buildTool("hack/build-promtool.sh", "promtool"))

// promtoolUnitTests is what TestAlertsFire reads of the unit test file.
type promtoolUnitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertsFire evaluates the alerting rules with Prometheus's own rule unit tests (`promtool
// test rules`, promtool built from the Prometheus module): over series shaped like the
// controller's, each alert fires with its labels and annotations when it should and stays silent
// when it should not. Every alert of the rule file must have both kinds of case there.
func TestAlertsFire(t *testing.T) {
	trackInputs(t, "tools/promtool", "hack/build-promtool.sh", "hack/lib", rulesFile, alertTests)
	var ut promtoolUnitTests
	if err := yaml.Unmarshal(readRepoFile(t, alertTests), &ut); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	if want := "../../../../" + rulesFile; !slices.Equal(ut.RuleFiles, []string{want}) {
		t.Errorf("%s tests the rule files %v, want [%s]", alertTests, ut.RuleFiles, want)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range ut.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	sort.Strings(alerts)
	if len(alerts) < 7 {
		t.Fatalf("found %d alerts in %s, want at least 7", len(alerts), rulesFile)
	}
	for _, a := range alerts {
		if !fires[a] || !silent[a] {
			t.Errorf("%s has no case where %s fires and one where it stays silent", alertTests, a)
		}
	}
	out, err := run(repoRoot(t), nil, mustGet(t, buildPromtool), "test", "rules", alertTests)
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
