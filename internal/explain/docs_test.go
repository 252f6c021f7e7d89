package explain

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestDocsWorkedExample: the worked example of docs/explain.md is testdata/stuck.golden, the
// output TestStuckPodsStory checks, copied whole: when the output changes and the golden file
// with it, this fails until the page shows the new output too.
func TestDocsWorkedExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/explain.md")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/stuck.golden")
	if err != nil {
		t.Fatal(err)
	}
	got, err := workedExample(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(golden) {
		t.Errorf("docs/explain.md's worked example differs from testdata/stuck.golden: copy the golden file into its fenced block, whole\n--- docs\n%s\n--- golden\n%s", got, golden)
	}
}

// workedExample is the first fenced block after the "## Worked example" heading, with its
// final newline.
func workedExample(doc string) (string, error) {
	_, section, ok := strings.Cut(doc, "\n## Worked example\n")
	if !ok {
		return "", errors.New("docs/explain.md has no \"## Worked example\" section")
	}
	_, block, ok := strings.Cut(section, "\n```\n")
	if !ok {
		return "", errors.New("the worked example has no fenced block")
	}
	body, _, ok := strings.Cut(block, "\n```\n")
	if !ok {
		return "", errors.New("the worked example's fenced block is not closed")
	}
	return body + "\n", nil
}
