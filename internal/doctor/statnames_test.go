package doctor

import (
	"regexp"
	"testing"
)

// TestStatNamesAreWords: the run's statistics end the text report ("took 0.5s, API requests 39,
// configz errors 0, ...") and key the JSON's stats; they are named in words, never a Go-style
// camelCase identifier such as "apiRequests".
func TestStatNamesAreWords(t *testing.T) {
	camel := regexp.MustCompile(`[a-z][A-Z]`)
	for _, name := range []string{StatAPIRequests, StatConfigzRequests, StatConfigzErrors, StatNodes, StatLeases,
		StatAddonPodPages, StatPullEventPages, StatPullQPSRefusals, StatAWSNodePods, StatCNIMetricsRequests, StatCNIMetricsErrors,
		StatPodsListed, StatStuckPods, StatSandboxEvents, StatPodListPages, StatEventListPages} {
		if camel.MatchString(name) {
			t.Errorf("stat %q is camelCase, not words", name)
		}
	}
}
