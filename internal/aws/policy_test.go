package aws_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// TestPolicyDocumentMatchesCalls: the IAM policy in docs/aws.md allows every permission the
// code's calls need, and nothing else.
func TestPolicyDocumentMatchesCalls(t *testing.T) {
	doc, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	if !ok {
		t.Fatal("docs/aws.md has no ```json block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var policy struct {
		Statement []struct {
			Effect string
			Action []string
		}
	}
	if err := json.Unmarshal([]byte(block), &policy); err != nil {
		t.Fatalf("the policy in docs/aws.md is not valid JSON: %v", err)
	}
	var allowed []string
	for _, s := range policy.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement with effect %q", s.Effect)
		}
		allowed = append(allowed, s.Action...)
	}
	want := slices.Clone(nkaws.Permissions)
	slices.Sort(want)
	slices.Sort(allowed)
	if !slices.Equal(allowed, want) {
		t.Errorf("policy allows %v, the code calls %v", allowed, want)
	}
	for _, a := range allowed {
		if !strings.Contains(a, ":Describe") && !strings.Contains(a, ":Get") && !strings.HasPrefix(a, "logs:") {
			t.Errorf("%s is not read-only", a)
		}
	}
}
