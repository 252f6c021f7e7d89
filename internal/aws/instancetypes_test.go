package aws_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// futureType is an instance type the built-in table does not know, as EC2 describes it.
func futureType(name string, vcpus, enis, ipv4 int32) ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		InstanceType: ec2types.InstanceType(name),
		Hypervisor:   ec2types.InstanceTypeHypervisorNitro,
		BareMetal:    awssdk.Bool(false),
		VCpuInfo:     &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(vcpus)},
		NetworkInfo: &ec2types.NetworkInfo{
			MaximumNetworkInterfaces:  awssdk.Int32(enis * 2),
			Ipv4AddressesPerInterface: awssdk.Int32(ipv4),
			DefaultNetworkCardIndex:   awssdk.Int32(0),
			NetworkCards: []ec2types.NetworkCardInfo{
				{NetworkCardIndex: awssdk.Int32(1), MaximumNetworkInterfaces: awssdk.Int32(enis)},
				{NetworkCardIndex: awssdk.Int32(0), MaximumNetworkInterfaces: awssdk.Int32(enis)},
			},
		},
	}
}

// TestInstanceCatalog: names the table does not know are asked from EC2 in batches of at most
// 100 (EC2's limit, which the in-memory EC2 enforces), every page read, each name once; a name
// EC2 does not know stays unknown without failing the others; the result feeds the max-pods
// formula with EC2's real vCPU count and says it came from EC2.
func TestInstanceCatalog(t *testing.T) {
	cloud := awsfake.New()
	cloud.PageSize = 7
	var ask []string
	for i := 0; i < 150; i++ {
		name := fmt.Sprintf("z%d.48xlarge", i)
		cloud.InstanceTypes = append(cloud.InstanceTypes, futureType(name, 192, 15, 50))
		ask = append(ask, name)
	}
	ask = append(ask, "Z0.48XLARGE", "nosuch.large", "z1.48xlarge") // a different case, an unknown, a repeat

	cat, err := nkaws.InstanceCatalog(context.Background(), cloud, ask)
	if err != nil {
		t.Fatal(err)
	}
	it, err := cat.Lookup("z149.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if it.ENIs != 15 || it.TotalENIs != 30 || it.NetworkCards != 2 || it.IPv4PerENI != 50 || it.VCPUs != 192 || it.Source != eni.SourceEC2 || !it.Nitro() {
		t.Errorf("z149.48xlarge from EC2: %+v", it)
	}
	r, err := eni.Calculate(it, eni.Options{})
	if err != nil || r.MaxPods != 250 || r.VCPUSource != eni.VCPUSourceEC2 || r.DataSource != eni.SourceEC2 {
		t.Errorf("max pods of z149.48xlarge: %+v, %v; want 250 with EC2's vCPU count and data", r, err)
	}
	if _, err := cat.Lookup("nosuch.large"); !errors.Is(err, eni.ErrUnknownInstanceType) {
		t.Errorf("nosuch.large: %v, want unknown", err)
	}
	asked := map[string]int{}
	for _, n := range cloud.InstanceTypesAsked() {
		asked[n]++
	}
	// The second batch is asked again without the unknown name.
	for n, want := range map[string]int{"z0.48xlarge": 1, "z1.48xlarge": 1, "nosuch.large": 1, "z149.48xlarge": 2} {
		if asked[n] != want {
			t.Errorf("%s asked %d times, want %d", n, asked[n], want)
		}
	}
	// Two batches (100 + 51 names), the one holding the unknown name asked again without it;
	// each of the three requests takes several pages.
	if calls := cloud.Calls(nkaws.PermDescribeInstanceTypes); calls < 3+2 {
		t.Errorf("%d DescribeInstanceTypes calls: batches or pages not all read", calls)
	}
}

// TestInstanceCatalogDenied: AccessDenied names the permission to add.
func TestInstanceCatalogDenied(t *testing.T) {
	cloud := awsfake.New()
	cloud.Deny[nkaws.PermDescribeInstanceTypes] = true
	_, err := nkaws.InstanceCatalog(context.Background(), cloud, []string{"z9.large"})
	if !nkaws.IsAccessDenied(err) || !strings.Contains(err.Error(), "ec2:DescribeInstanceTypes") {
		t.Fatalf("got %v, want AccessDenied naming ec2:DescribeInstanceTypes", err)
	}
}

// TestInstanceCatalogAsksNothing: no names, no call.
func TestInstanceCatalogAsksNothing(t *testing.T) {
	cloud := awsfake.New()
	if _, err := nkaws.InstanceCatalog(context.Background(), cloud, nil); err != nil {
		t.Fatal(err)
	}
	if n := cloud.Calls(nkaws.PermDescribeInstanceTypes); n != 0 {
		t.Fatalf("%d calls for no names", n)
	}
}
