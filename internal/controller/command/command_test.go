package command

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// TestAWSFlags: the EC2 loop's flags need --aws, and --aws needs the EKS cluster's name and a
// positive interval. Both binaries build their command from these options (NewRoot is the
// image's, New the CLI's), so the rules hold in both.
func TestAWSFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for valid
	}{
		{nil, ""},
		{[]string{"--aws", "--eks-cluster", "prod"}, ""},
		{[]string{"--aws", "--eks-cluster", "prod", "--region", "eu-west-1", "--aws-interval", "1m", "--register-grace", "30s"}, ""},
		{[]string{"--aws", "--eks-cluster", "prod", "--register-grace", "0s"}, "--register-grace must be positive"},
		{[]string{"--aws"}, "--aws needs --eks-cluster"},
		{[]string{"--aws", "--eks-cluster", " "}, "--aws needs --eks-cluster"},
		{[]string{"--aws", "--eks-cluster", "prod", "--aws-interval", "0s"}, "--aws-interval and --register-grace must be positive"},
		{[]string{"--aws", "--eks-cluster", "prod", "--register-grace", "-1m"}, "--register-grace must be positive"},
		{[]string{"--eks-cluster", "prod"}, "--eks-cluster needs --aws"},
		{[]string{"--region", "eu-west-1"}, "--region needs --aws"},
		{[]string{"--aws-interval", "1m"}, "--aws-interval needs --aws"},
		{[]string{"--register-grace", "1m"}, "--register-grace needs --aws"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := newOptions(kube.NewConnectionFlags())
			cmd := &cobra.Command{}
			o.AddFlags(cmd.Flags())
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(cmd, nil); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("valid flags refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestChecksFlags: the check loop's flags need --checks, and its interval and headroom alert must
// be positive.
func TestChecksFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for valid
	}{
		{[]string{"--checks"}, ""},
		{[]string{"--checks", "--checks-interval", "10m", "--checks-headroom-alert", "25", "--checks-kubelet-config"}, ""},
		{[]string{"--checks", "--aws", "--eks-cluster", "prod"}, ""},
		{[]string{"--checks", "--checks-interval", "0s"}, "--checks-interval and --checks-headroom-alert must be positive"},
		{[]string{"--checks", "--checks-headroom-alert", "0"}, "--checks-interval and --checks-headroom-alert must be positive"},
		{[]string{"--checks-interval", "1m"}, "--checks-interval needs --checks"},
		{[]string{"--checks-headroom-alert", "5"}, "--checks-headroom-alert needs --checks"},
		{[]string{"--checks-kubelet-config"}, "--checks-kubelet-config needs --checks"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := newOptions(kube.NewConnectionFlags())
			cmd := &cobra.Command{}
			o.AddFlags(cmd.Flags())
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(cmd, nil); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("valid flags refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestMetricsSecureByDefault (issue 31 item 9): /metrics is served over HTTPS to authenticated
// and authorized scrapers unless --metrics-secure=false is given.
func TestMetricsSecureByDefault(t *testing.T) {
	for _, args := range [][]string{nil, {"--metrics-secure=false"}} {
		o := newOptions(kube.NewConnectionFlags())
		cmd := &cobra.Command{}
		o.AddFlags(cmd.Flags())
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if want := len(args) == 0; o.controller.SecureMetrics != want {
			t.Errorf("%v: SecureMetrics %v, want %v", args, o.controller.SecureMetrics, want)
		}
	}
}
