package maxpods

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// cloudWith is an EC2 that knows m5.large (as the table does) and a type newer than the table.
func cloudWith() *awsfake.Cloud {
	c := awsfake.New()
	c.InstanceTypes = []ec2types.InstanceTypeInfo{
		{InstanceType: "m5.large", Hypervisor: ec2types.InstanceTypeHypervisorNitro, VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(2)},
			NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(3), Ipv4AddressesPerInterface: awssdk.Int32(10)}},
		{InstanceType: "m9z.48xlarge", Hypervisor: ec2types.InstanceTypeHypervisorNitro, VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(192)},
			NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(15), Ipv4AddressesPerInterface: awssdk.Int32(50)}},
	}
	return c
}

// TestMaxPods: the table answers for the types it knows without calling AWS; --aws asks EC2
// only for unknown types and for real vCPU counts where the ceiling depends on them, and the
// output says where each figure came from; names are case-insensitive and a typo gets a
// suggestion; AccessDenied names ec2:DescribeInstanceTypes.
func TestMaxPods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		opts    Options
		deny    bool
		want    []string // substrings of the text output, or of the error
		wantErr bool
		wantAsk []string // names sent to DescribeInstanceTypes
	}{
		{name: "table type, no AWS", args: []string{"m5.large"},
			want: []string{"m5.large: max pods 29", "data:        " + eni.DataSource}},
		{name: "mixed case", args: []string{"M5.Large"},
			want: []string{"m5.large: max pods 29"}},
		{name: "typo", args: []string{"m5.larg"}, wantErr: true,
			want: []string{"did you mean m5.large?", "pass --aws to ask EC2"}},
		{name: "unknown without --aws", args: []string{"m9z.48xlarge"}, wantErr: true,
			want: []string{`unknown instance type "m9z.48xlarge"`, "pass --aws"}},
		{name: "unknown with --aws", args: []string{"m9z.48xlarge", "m5.large"}, opts: Options{AWS: true},
			want: []string{"m9z.48xlarge: max pods 250", "IP limit:    15 x 49 + 2 = 737", "ceiling:     250 (192 vCPUs, EC2 DescribeInstanceTypes): applied",
				"data:        EC2 DescribeInstanceTypes (nitro hypervisor)", "m5.large: max pods 29", "data:        " + eni.DataSource},
			wantAsk: []string{"m9z.48xlarge"}},
		{name: "--aws gives real vCPUs where the ceiling depends on them", args: []string{"m5.large"}, opts: Options{AWS: true, Options: eni.Options{PrefixDelegation: true}},
			want:    []string{"m5.large: max pods 110", "ceiling:     110 (2 vCPUs, EC2 DescribeInstanceTypes): applied", "data:        " + eni.DataSource},
			wantAsk: []string{"m5.large"}},
		{name: "--vcpus beats EC2", args: []string{"m5.large"}, opts: Options{AWS: true, VCPUs: 64, Options: eni.Options{PrefixDelegation: true}},
			want: []string{"m5.large: max pods 250", "(64 vCPUs, --vcpus)"}},
		{name: "unknown to EC2 too", args: []string{"m9z.larg"}, opts: Options{AWS: true}, wantErr: true,
			want: []string{"did you mean", "EC2 (ec2:DescribeInstanceTypes) does not know it either"}, wantAsk: []string{"m9z.larg"}},
		{name: "denied", args: []string{"m9z.48xlarge"}, opts: Options{AWS: true}, deny: true, wantErr: true,
			want: []string{"AWS denied ec2:DescribeInstanceTypes"}, wantAsk: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := cloudWith()
			cloud.Deny[nkaws.PermDescribeInstanceTypes] = tc.deny
			o := tc.opts
			o.Output = "text"
			if o.AWS {
				o.EC2 = cloud
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err := o.Run(context.Background(), &out, io.Discard, tc.args)
			got := out.String()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; output:\n%s", got)
				}
				got = err.Error()
			} else if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			if tc.wantAsk != nil && strings.Join(cloud.InstanceTypesAsked(), ",") != strings.Join(tc.wantAsk, ",") {
				t.Errorf("asked EC2 about %q, want %q", cloud.InstanceTypesAsked(), tc.wantAsk)
			}
			if !o.AWS && cloud.Calls(nkaws.PermDescribeInstanceTypes) != 0 {
				t.Errorf("called EC2 without --aws")
			}
		})
	}
}

// TestCeilingSaidInEveryOutput: c5.18xlarge's 737 (AWS's eni-max-pods.txt) is capped at 250 by the
// calculator's ceiling; the text explains it, the JSON carries the same explanation in
// ceilingNote, and -o value, whose stdout is the number alone, says it on stderr. An uncapped type
// gets no note.
func TestCeilingSaidInEveryOutput(t *testing.T) {
	for _, output := range []string{"text", "json", "value"} {
		t.Run(output, func(t *testing.T) {
			o := Options{Output: output}
			var out, errOut bytes.Buffer
			if err := o.Run(context.Background(), &out, &errOut, []string{"c5.18xlarge", "m5.large"}); err != nil {
				t.Fatal(err)
			}
			said := out.String()
			switch output {
			case "value":
				if out.String() != "250\n29\n" {
					t.Errorf("stdout: %q, want the numbers alone", out.String())
				}
				said = errOut.String()
				if strings.Count(said, "\n") != 1 || !strings.HasPrefix(said, "note: c5.18xlarge: ") {
					t.Errorf("stderr: want one note for the capped type, got %q", said)
				}
			case "json":
				var rs []eni.Result
				if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
					t.Fatal(err)
				}
				if rs[0].CeilingNote == "" || rs[1].CeilingNote != "" {
					t.Errorf("ceilingNote: %q (capped), %q (not capped)", rs[0].CeilingNote, rs[1].CeilingNote)
				}
			}
			for _, w := range []string{"250", "737"} {
				if !strings.Contains(said, w) {
					t.Errorf("%s output does not say %s:\nstdout %s\nstderr %s", output, w, out.String(), errOut.String())
				}
			}
			if output != "text" && !strings.Contains(said, "--show-max-allowed") {
				t.Errorf("%s output does not say how to get the IP limit: %s", output, said)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Output: "yaml"}, "unknown output format"},
		{Options{Output: "text", VCPUs: -1}, "--vcpus must not be negative"},
		{Options{Output: "text", Options: eni.Options{MaxENI: -1}}, "--max-eni must not be negative"},
		{Options{Output: "text", Options: eni.Options{ReservedENIs: -1}}, "--reserved-enis must not be negative"},
		{Options{Output: "text", AWS: true}, "no EC2 client"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
