// Package maxpods is the `nodekeeper maxpods` command: its options, the lookup of each
// instance type (the built-in table, or EC2 with --aws for the types the table does not know),
// and its text, JSON and value printers. The formulas are internal/eni's.
package maxpods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Options are the flags of `nodekeeper maxpods`.
type Options struct {
	eni.Options
	// VCPUs is --vcpus: the vCPU count to use for every type (0 = EC2's with --aws, else the
	// estimate from the size name).
	VCPUs int
	// Output is -o: text, json or value (the command's shared output flag sets it).
	Output string
	// AWS is --aws: ask EC2 (DescribeInstanceTypes) about the types the built-in table does not
	// know, and for real vCPU counts where the 110/250 ceiling depends on them.
	AWS bool
	// EC2 is the EC2 client; set by the command when AWS is true, never read otherwise.
	EC2 nkaws.EC2API
}

// AddFlags adds the command's own flags; -o and the AWS connection flags (--region,
// --profile) are the command tree's shared ones.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.CustomNetworking, "custom-networking", false, "VPC CNI custom networking (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true): the primary ENI carries no pod addresses")
	f.BoolVar(&o.PrefixDelegation, "prefix-delegation", false, "VPC CNI prefix delegation (ENABLE_PREFIX_DELEGATION=true): /28 prefixes instead of single addresses")
	f.StringVar(&o.CNIVersion, "cni-version", "", "VPC CNI version, for example 1.19.2 (prefix delegation needs 1.9 or later; empty assumes a current release)")
	f.IntVar(&o.MaxENI, "max-eni", 0, "use at most N ENIs (the CNI's MAX_ENI); 0 = all")
	f.IntVar(&o.ReservedENIs, "reserved-enis", 0, "ENIs kept from pods on top of the custom-networking one (e.g. attached by another agent)")
	f.BoolVar(&o.ShowMaxAllowed, "show-max-allowed", false, "print the IP-limited maximum, without the 110/250 ceiling")
	f.IntVar(&o.VCPUs, "vcpus", 0, "vCPU count of the instance type (decides the 110/250 ceiling); default: EC2's with --aws, else estimated from the size name")
	f.BoolVar(&o.AWS, "aws", false, "ask EC2 (DescribeInstanceTypes, read-only) about instance types the built-in table does not know, and for real vCPU counts where the ceiling depends on them")
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch o.Output {
	case "text", "json", "value":
	default:
		return fmt.Errorf("unknown output format %q (want text, json or value)", o.Output)
	}
	for _, f := range []struct {
		flag  string
		value int
	}{{"--vcpus", o.VCPUs}, {"--max-eni", o.MaxENI}, {"--reserved-enis", o.ReservedENIs}} {
		if f.value < 0 {
			return fmt.Errorf("%s must not be negative, got %d", f.flag, f.value)
		}
	}
	if o.AWS && o.EC2 == nil {
		return errors.New("--aws: no EC2 client")
	}
	return nil
}

// Run computes max pods for each named instance type and prints the results to w; notes that
// are not the value itself (the ceiling, with -o value) go to errW.
func (o *Options) Run(ctx context.Context, w, errW io.Writer, names []string) error {
	results, err := o.Results(ctx, names)
	if err != nil {
		return err
	}
	return Print(w, errW, o.Output, results)
}

// Results computes max pods for each named instance type. With AWS it first asks EC2, in one
// batch, about every name the table does not know and every known one whose ceiling depends
// on a vCPU count that would otherwise be estimated; without AWS it calls nothing.
func (o *Options) Results(ctx context.Context, names []string) ([]eni.Result, error) {
	var cat *eni.Catalog
	if o.AWS {
		var ask []string
		for _, name := range names {
			if !eni.Known(name) || o.ceilingNeedsVCPUs(name) {
				ask = append(ask, name)
			}
		}
		if len(ask) > 0 {
			var err error
			if cat, err = nkaws.InstanceCatalog(ctx, o.EC2, ask); err != nil {
				return nil, err
			}
		}
	}
	var results []eni.Result
	for _, name := range names {
		it, err := cat.Lookup(name)
		if err != nil {
			if errors.Is(err, eni.ErrUnknownInstanceType) {
				if o.AWS {
					return nil, fmt.Errorf("%w; EC2 (%s) does not know it either", err, nkaws.PermDescribeInstanceTypes)
				}
				return nil, fmt.Errorf("%w; for a type newer than the table, pass --aws to ask EC2", err)
			}
			return nil, err
		}
		opts := o.Options
		switch {
		case o.VCPUs > 0:
			opts.VCPUs, opts.VCPUSource = o.VCPUs, "--vcpus"
		case it.VCPUs > 0:
			// Calculate takes the type's own count, from EC2.
		default:
			if n, ok := eni.EstimateVCPUs(it.Name); ok {
				opts.VCPUs, opts.VCPUSource = n, eni.VCPUSourceEstimate
			}
		}
		r, err := eni.Calculate(it, opts)
		if errors.Is(err, eni.ErrVCPUsUnknown) {
			return nil, fmt.Errorf("%w; pass --vcpus N, --aws (or --show-max-allowed)", err)
		}
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// ceilingNeedsVCPUs reports whether a type of the table gets the 110/250 ceiling with these
// options and no vCPU count was given: the table has none, and EC2's real one beats an estimate.
func (o *Options) ceilingNeedsVCPUs(name string) bool {
	if o.VCPUs > 0 || o.ShowMaxAllowed {
		return false
	}
	it, err := eni.Lookup(name)
	if err != nil {
		return false
	}
	opts := o.Options
	opts.ShowMaxAllowed = true
	r, err := eni.Calculate(it, opts)
	return err == nil && r.MaxAllowed > eni.CeilingLowCPU
}

// Print writes results in the output format: text explains each number, json prints the
// results (one object for one type, the ceiling explained in ceilingNote), value the numbers
// only, with the ceiling's note on errW for every capped type: a script reading 250 for
// c5.18xlarge must not take it for the 737 of AWS's eni-max-pods.txt without being told.
func Print(w, errW io.Writer, output string, results []eni.Result) error {
	switch output {
	case "json":
		enc := json.NewEncoder(textsafe.NewJSONWriter(w))
		enc.SetIndent("", "  ")
		if len(results) == 1 {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	case "value":
		for _, r := range results {
			if _, err := fmt.Fprintln(w, r.MaxPods); err != nil {
				return err
			}
			if r.CeilingNote != "" {
				fmt.Fprintf(errW, "note: %s: %s\n", textsafe.Escape(r.InstanceType), r.CeilingNote)
			}
		}
		return nil
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		writeText(&b, r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeText(b *strings.Builder, r eni.Result) {
	fmt.Fprintf(b, "%s: max pods %d\n", r.InstanceType, r.MaxPods)
	mode := "secondary IP addresses"
	if r.PrefixDelegation {
		mode = "prefix delegation (/28 prefixes)"
	}
	if r.CustomNetworking {
		mode += ", custom networking"
	}
	if r.CNIVersion != "" {
		mode += ", VPC CNI " + r.CNIVersion
	}
	fmt.Fprintf(b, "  mode:        %s\n", mode)
	fmt.Fprintf(b, "  ENIs:        %d for pods of %d on the default network card", r.ENIsForPods, r.ENIs)
	var minus []string
	if r.MaxENI > 0 {
		minus = append(minus, fmt.Sprintf("max ENI %d", r.MaxENI))
	}
	if r.CustomNetworking {
		minus = append(minus, "1 for custom networking")
	}
	if r.ReservedENIs > 0 {
		minus = append(minus, fmt.Sprintf("%d reserved", r.ReservedENIs))
	}
	if len(minus) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(minus, ", "))
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "  addresses:   %d pod IPs per ENI (%d IPv4 per ENI - 1", r.PodIPsPerENI, r.IPv4PerENI)
	if r.PrefixDelegation {
		fmt.Fprintf(b, ", x%d per prefix", eni.IPsPerPrefix)
	}
	b.WriteString(")\n")
	fmt.Fprintf(b, "  IP limit:    %d x %d + %d = %d\n", r.ENIsForPods, r.PodIPsPerENI, eni.HostNetworkPods, r.MaxAllowed)
	switch {
	case r.Ceiling > 0:
		fmt.Fprintf(b, "  ceiling:     %d (%d vCPUs, %s)", r.Ceiling, r.VCPUs, r.VCPUSource)
		if r.Capped {
			b.WriteString(": applied")
		}
		b.WriteString("\n")
	case r.MaxAllowed > eni.CeilingLowCPU:
		b.WriteString("  ceiling:     not applied (--show-max-allowed)\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  note:        %s\n", n)
	}
	fmt.Fprintf(b, "  data:        %s (%s hypervisor", r.DataSource, orNo(r.Hypervisor))
	if r.BareMetal {
		b.WriteString(", bare metal")
	}
	b.WriteString(")\n")
}

func orNo(s string) string {
	if s == "" {
		return "no"
	}
	return s
}
