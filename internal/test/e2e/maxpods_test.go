//go:build linux

package e2e

import (
	"strings"
	"testing"
)

func TestMaxPods(t *testing.T) {
	u := newUser(t)
	// The figures of the EKS max-pods calculator.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"m5.large"}, "29"},
		{[]string{"M5.Large"}, "29"}, // names are case-insensitive
		{[]string{"m5.large", "--custom-networking"}, "20"},
		{[]string{"m5.large", "--prefix-delegation"}, "110"},
		{[]string{"m5.large", "--prefix-delegation", "--show-max-allowed"}, "434"},
	} {
		r := u.expect(exitOK, append([]string{"maxpods", "-o", "value"}, tc.args...)...)
		if strings.TrimSpace(r.stdout) != tc.want {
			t.Errorf("maxpods %v: %q, want %s\n%s", tc.args, r.stdout, tc.want, r)
		}
	}
	r := u.expect(exitOK, "maxpods", "m5.large")
	mustContain(t, r, r.stdout, "m5.large", "29")

	r = u.expect(exitOK, "maxpods", "-o", "json", "c6i.32xlarge")
	type maxPods struct {
		InstanceType string `json:"instanceType"`
		MaxPods      int    `json:"maxPods"`
	}
	mp := decode[maxPods](t, r, "MaxPods")
	if mp.InstanceType != "c6i.32xlarge" || mp.MaxPods != 250 {
		t.Errorf("%+v, want c6i.32xlarge at 250:\n%s", mp, r)
	}

	r = u.expect(exitFailed, "maxpods", "m5.enormous")
	mustContain(t, r, r.stderr, "error: ", "m5.enormous")
	u.expect(exitUsage, "maxpods")                               // no instance type
	u.expect(exitUsage, "maxpods", "m5.large", "--region", "x")  // --region needs --aws
	u.expect(exitUsage, "maxpods", "m5.large", "-o", "yaml-ish") // unknown output
}
