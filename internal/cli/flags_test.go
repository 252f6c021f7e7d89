package cli

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagsNeed: the first dependent flag set is named; none set, or none listed, passes.
func TestFlagsNeed(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing set", nil, ""},
		{"an unrelated flag set", []string{"--output=json"}, ""},
		{"one dependent flag", []string{"--profile=p"}, "--profile needs --aws"},
		{"the first listed of two", []string{"--profile=p", "--region=r"}, "--region needs --aws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.String("region", "", "")
			f.String("profile", "", "")
			f.String("output", "", "")
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := FlagsNeed(f.Changed, "aws", "region", "profile")
			if got := errText(err); got != tc.want {
				t.Errorf("FlagsNeed = %q, want %q", got, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
