package aws

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

// maxInstanceTypesPerCall is the most names one DescribeInstanceTypes request may carry.
const maxInstanceTypesPerCall = 100

// InstanceCatalog returns the built-in instance table completed by EC2 for the names in ask:
// the max-pods and capacity checks ask EC2 only about instance types the table does not know
// (and, where the ceiling needs it, for a real vCPU count). The names are deduplicated and sent
// in batches of up to 100 per DescribeInstanceTypes call, every page read. A name EC2 does not
// know stays unknown (the catalog's Lookup then says so and suggests close names); it does not
// fail the others. AccessDenied names ec2:DescribeInstanceTypes.
func InstanceCatalog(ctx context.Context, api EC2API, ask []string) (*eni.Catalog, error) {
	var names []string
	for _, n := range ask {
		if n = eni.Normalize(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var learnt []eni.InstanceType
	for len(names) > 0 {
		batch := names[:min(len(names), maxInstanceTypesPerCall)]
		names = names[len(batch):]
		infos, err := describeKnownInstanceTypes(ctx, api, batch)
		if err != nil {
			return nil, err
		}
		for _, info := range infos {
			if t, ok := InstanceTypeFromEC2(info); ok {
				learnt = append(learnt, t)
			}
		}
	}
	return eni.NewCatalog(learnt...), nil
}

// describeKnownInstanceTypes describes names, leaving out those EC2 does not know: EC2 fails
// the whole request with InvalidInstanceType and lists the unknown names, so they are dropped
// and the rest asked again; when the list cannot be read, each name is asked on its own.
func describeKnownInstanceTypes(ctx context.Context, api EC2API, names []string) ([]ec2types.InstanceTypeInfo, error) {
	for len(names) > 0 {
		types := make([]ec2types.InstanceType, len(names))
		for i, n := range names {
			types[i] = ec2types.InstanceType(n)
		}
		infos, err := DescribeInstanceTypes(ctx, api, &ec2.DescribeInstanceTypesInput{InstanceTypes: types})
		if err == nil {
			return infos, nil
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidInstanceType" {
			return nil, err
		}
		unknown := unknownInstanceTypes(apiErr.ErrorMessage())
		rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(unknown, n) })
		if len(rest) == len(names) {
			if len(names) == 1 {
				return nil, nil // the one name asked is unknown
			}
			// The message named none of ours: ask one at a time.
			var out []ec2types.InstanceTypeInfo
			for _, n := range names {
				one, err := describeKnownInstanceTypes(ctx, api, []string{n})
				if err != nil {
					return nil, err
				}
				out = append(out, one...)
			}
			return out, nil
		}
		names = rest
	}
	return nil, nil
}

// unknownInstanceTypes reads the names of EC2's "The following supplied instance types do not
// exist: [a, b]".
func unknownInstanceTypes(msg string) []string {
	_, list, ok := strings.Cut(msg, "[")
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, "]")
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = eni.Normalize(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// InstanceTypeFromEC2 converts EC2's description of an instance type into what the max-pods
// formulas need, marked as coming from EC2. It reports false when EC2 gave no network data.
// EC2 does not say whether a type supports ENI trunking (security groups for pods), so a type
// known only from EC2 is taken as not trunking-compatible.
func InstanceTypeFromEC2(info ec2types.InstanceTypeInfo) (eni.InstanceType, bool) {
	t := eni.InstanceType{
		Name:       eni.Normalize(string(info.InstanceType)),
		Hypervisor: string(info.Hypervisor),
		BareMetal:  info.BareMetal != nil && *info.BareMetal,
		Source:     eni.SourceEC2,
	}
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		t.VCPUs = int(*info.VCpuInfo.DefaultVCpus)
	}
	ni := info.NetworkInfo
	if ni == nil || ni.MaximumNetworkInterfaces == nil || ni.Ipv4AddressesPerInterface == nil {
		return t, false
	}
	t.TotalENIs = int(*ni.MaximumNetworkInterfaces)
	t.IPv4PerENI = int(*ni.Ipv4AddressesPerInterface)
	if ni.DefaultNetworkCardIndex != nil {
		t.DefaultNetworkCard = int(*ni.DefaultNetworkCardIndex)
	}
	// The VPC CNI places pod addresses on the default network card only.
	t.ENIs, t.NetworkCards = t.TotalENIs, 1
	if len(ni.NetworkCards) > 0 {
		t.NetworkCards = len(ni.NetworkCards)
		for _, c := range ni.NetworkCards {
			if c.NetworkCardIndex != nil && int(*c.NetworkCardIndex) == t.DefaultNetworkCard && c.MaximumNetworkInterfaces != nil {
				t.ENIs = int(*c.MaximumNetworkInterfaces)
			}
		}
	}
	return t, t.ENIs > 0 && t.IPv4PerENI > 0
}
