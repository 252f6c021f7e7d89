package app

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

const (
	prodARN    = "arn:aws:eks:eu-west-1:111122223333:cluster/prod"
	stagingARN = "arn:aws:eks:us-east-2:111122223333:cluster/staging"
)

// useEKSKubeconfig points KUBECONFIG at a kubeconfig named the way `aws eks update-kubeconfig`
// names it (cluster and context both the cluster's ARN), with an eksctl-named cluster and a
// cluster named neither way beside them. The current context is current.
func useEKSKubeconfig(t *testing.T, current string) {
	t.Helper()
	clusters := []string{prodARN, stagingARN, "prod.ap-south-1.eksctl.io", "demo"}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for _, c := range clusters {
		b.WriteString("- name: " + c + "\n  cluster:\n    server: https://127.0.0.1:1\n")
	}
	b.WriteString("contexts:\n")
	for _, c := range clusters {
		b.WriteString("- name: " + c + "\n  context:\n    cluster: " + c + "\n    user: u\n")
	}
	b.WriteString("users:\n- name: u\n  user:\n    token: t\ncurrent-context: " + current + "\n")
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
}

var errStopAtLoad = errors.New("test: stop at the AWS load")

// stopAtLoad is an AWS loader that records the region asked for and stops the command there.
type stopAtLoad struct {
	loads  int
	region string
}

func (s *stopAtLoad) load(_ context.Context, o nkaws.LoadOptions) (*allclients.Clients, error) {
	s.loads++
	s.region = o.Region
	return nil, errStopAtLoad
}

// TestEKSClusterOfDoctorAWS: doctor --aws finds the EKS cluster in --eks-cluster, else in the
// kubeconfig entry kubectl's flags select (--context, --cluster, the current context) when it
// is named the EKS way, and takes the region from that name unless --region is given; a
// kubeconfig name that is not EKS's is never taken for the EKS name.
func TestEKSClusterOfDoctorAWS(t *testing.T) {
	for _, tc := range []struct {
		name        string
		current     string
		args        []string
		wantCluster string // "" when the command must refuse before loading AWS
		wantRegion  string
		wantErr     []string
	}{
		{name: "ARN-named kubeconfig, no flag: the current context's cluster", current: prodARN,
			wantCluster: "prod", wantRegion: "eu-west-1"},
		{name: "kubectl --context picks the entry", current: prodARN, args: []string{"--context", stagingARN},
			wantCluster: "staging", wantRegion: "us-east-2"},
		{name: "kubectl --cluster ARN picks the entry, the EKS name comes from it", current: prodARN, args: []string{"--cluster", stagingARN},
			wantCluster: "staging", wantRegion: "us-east-2"},
		{name: "eksctl-named kubeconfig", current: "prod.ap-south-1.eksctl.io",
			wantCluster: "prod", wantRegion: "ap-south-1"},
		{name: "--eks-cluster wins over the kubeconfig", current: prodARN, args: []string{"--eks-cluster", "demo"},
			wantCluster: "demo", wantRegion: ""},
		{name: "--eks-cluster wins over kubectl --cluster", current: prodARN, args: []string{"--cluster", stagingARN, "--eks-cluster", "demo", "--region", "ca-central-1"},
			wantCluster: "demo", wantRegion: "ca-central-1"},
		{name: "--eks-cluster ARN gives the region", current: "demo", args: []string{"--eks-cluster", stagingARN},
			wantCluster: "staging", wantRegion: "us-east-2"},
		{name: "--region wins over the ARN's", current: prodARN, args: []string{"--region", "eu-central-1"},
			wantCluster: "prod", wantRegion: "eu-central-1"},
		{name: "non-EKS kubeconfig, no flag", current: "demo",
			wantErr: []string{`kubeconfig cluster "demo" is not named the EKS way`, "pass --eks-cluster"}},
		{name: "kubectl --cluster is never the EKS name", current: prodARN, args: []string{"--cluster", "demo"},
			wantErr: []string{`kubeconfig cluster "demo" is not named the EKS way`, "pass --eks-cluster"}},
		{name: "no kubeconfig context", current: "",
			wantErr: []string{"no current context", "pass --eks-cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useEKSKubeconfig(t, tc.current)
			aws := &stopAtLoad{}
			var out, errb strings.Builder
			root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, aws.load)
			root.SetArgs(append([]string{"doctor", "--aws"}, tc.args...))
			err := root.ExecuteContext(context.Background())
			if tc.wantCluster == "" {
				if err == nil || aws.loads != 0 {
					t.Fatalf("err %v after %d loads, want a refusal before loading AWS", err, aws.loads)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
				return
			}
			if !errors.Is(err, errStopAtLoad) || aws.loads != 1 {
				t.Fatalf("err %v after %d loads, want the run to reach the AWS load once", err, aws.loads)
			}
			if want := `EKS cluster "` + tc.wantCluster + `"`; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
			if aws.region != tc.wantRegion {
				t.Errorf("region %q, want %q", aws.region, tc.wantRegion)
			}
		})
	}
}

// TestEKSClusterFlagNeedsAWS: --eks-cluster is on the commands that act on a cluster's AWS side
// and needs their AWS switch.
func TestEKSClusterFlagNeedsAWS(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, args := range [][]string{
		{"doctor", "--eks-cluster", "prod"},
		{"leases", "--eks-cluster", "prod"},
		{"audit", "--eks-cluster", "prod", "x.log"},
	} {
		_, _, err := runCmd(t, nil, args...)
		if err == nil || !strings.Contains(err.Error(), "--eks-cluster needs --") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestAuditCloudWatchEKSCluster: audit --cloudwatch reads the log group of --eks-cluster, of its
// deprecated spelling --cluster (which warns on stderr, leaving -o json intact), or of the
// kubeconfig's current context; without any of them it says to pass --eks-cluster.
func TestAuditCloudWatchEKSCluster(t *testing.T) {
	// An account holding the log group of one cluster only: reading another fails.
	cloudOf := func(cluster string) *awsfake.Cloud {
		cloud := awsfake.New()
		cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
		cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
		for i, m := range zombieTrail() {
			cloud.AddLogEvents("/aws/eks/"+cluster+"/cluster", awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: auditT0.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Message: m})
		}
		return cloud
	}
	window := []string{"audit", "--cloudwatch", "--since", "2024-04-05 05:00", "--until", "2024-04-05 07:00", "-o", "json"}
	for _, tc := range []struct {
		name       string
		current    string
		args       []string
		cluster    string // whose log group must be read
		wantRegion string
		wantErr    string
		wantStderr string
	}{
		{name: "--eks-cluster ARN", current: "demo", args: []string{"--eks-cluster", stagingARN}, cluster: "staging", wantRegion: "us-east-2"},
		{name: "--eks-cluster wins over the kubeconfig", current: prodARN, args: []string{"--eks-cluster", "demo", "--region", "eu-west-1"}, cluster: "demo", wantRegion: "eu-west-1"},
		{name: "deprecated --cluster", current: "demo", args: []string{"--cluster", stagingARN}, cluster: "staging", wantRegion: "us-east-2",
			wantStderr: "Flag --cluster has been deprecated, use --eks-cluster"},
		{name: "the kubeconfig's current context", current: prodARN, cluster: "prod", wantRegion: "eu-west-1"},
		{name: "non-EKS kubeconfig", current: "demo", wantErr: "pass --eks-cluster"},
		{name: "both spellings", current: "demo", args: []string{"--cluster", "prod", "--eks-cluster", "prod"}, wantErr: "pass only --eks-cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useEKSKubeconfig(t, tc.current)
			aws := &fakeAWS{cloud: cloudOf(tc.cluster)}
			out, stderr, err := runCmd(t, aws, append(window, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || aws.loads != 0 {
					t.Fatalf("err %v after %d loads, want %q before loading AWS", err, aws.loads, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr)
			}
			var rep struct {
				Zombies []struct{ Node string } `json:"zombies"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Zombies) != 1 {
				t.Errorf("stdout is not the JSON report (%v):\n%s", err, out)
			}
			if aws.region != tc.wantRegion {
				t.Errorf("region %q, want %q", aws.region, tc.wantRegion)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr)
			}
		})
	}
}
