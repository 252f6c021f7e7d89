package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

// maxPodsOptions are the settings of `nodekeeper maxpods`.
type maxPodsOptions struct {
	g *globalOptions

	eni    eni.Options
	vcpus  int
	output *outputFlags
}

func newMaxPodsCommand(g *globalOptions) *cobra.Command {
	o := &maxPodsOptions{g: g, output: newOutputFlags("text", "output format: text, json or value (the number only, like the calculator)", "text", "json", "value")}
	cmd := &cobra.Command{
		Use:   "maxpods TYPE [TYPE...]",
		Short: "Recommended kubelet max-pods for an EC2 instance type with the Amazon VPC CNI",
		Long: `maxpods applies the formulas of the EKS max-pods calculator (max-pods-calculator.sh) without
calling AWS: ENIs of the default network card x (IPv4 addresses per ENI - 1) + 2, with one ENI less
under custom networking, /28 prefixes (x16) under prefix delegation on Nitro types with VPC CNI 1.9+,
and a ceiling of 110 pods up to 30 vCPUs and 250 above unless --show-max-allowed.

Instance data comes from ` + eni.DataSource + `.
The vCPU count only matters for the ceiling; without --vcpus it is estimated from the size name.`,
		Example: `  nodekeeper maxpods m5.large                                # 29
  nodekeeper maxpods m5.large --custom-networking            # 20
  nodekeeper maxpods m5.large --prefix-delegation            # 110
  nodekeeper maxpods m5.large --prefix-delegation --show-max-allowed   # 434
  nodekeeper maxpods c6i.32xlarge --prefix-delegation -o json`,
		Args:              usageArgs(cobra.MinimumNArgs(1)),
		ValidArgsFunction: completeInstanceTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageError(err)
			}
			return o.Run(args)
		},
	}
	o.AddFlags(cmd.Flags())
	o.output.RegisterCompletion(cmd)
	return cmd
}

func (o *maxPodsOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.eni.CustomNetworking, "custom-networking", false, "VPC CNI custom networking (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true): the primary ENI carries no pod addresses")
	f.BoolVar(&o.eni.PrefixDelegation, "prefix-delegation", false, "VPC CNI prefix delegation (ENABLE_PREFIX_DELEGATION=true): /28 prefixes instead of single addresses")
	f.StringVar(&o.eni.CNIVersion, "cni-version", "", "VPC CNI version, for example 1.19.2 (prefix delegation needs 1.9 or later; empty assumes a current release)")
	f.IntVar(&o.eni.MaxENI, "max-eni", 0, "use at most N ENIs (the CNI's MAX_ENI); 0 = all")
	f.IntVar(&o.eni.ReservedENIs, "reserved-enis", 0, "ENIs kept from pods on top of the custom-networking one (e.g. attached by another agent)")
	f.BoolVar(&o.eni.ShowMaxAllowed, "show-max-allowed", false, "print the IP-limited maximum, without the 110/250 ceiling")
	f.IntVar(&o.vcpus, "vcpus", 0, "vCPU count of the instance type (decides the 110/250 ceiling); default: estimated from the size name")
	o.output.AddFlags(f)
}

// Validate refuses an unknown -o and a negative --vcpus.
func (o *maxPodsOptions) Validate() error {
	if err := o.output.Validate(); err != nil {
		return err
	}
	if o.vcpus < 0 {
		return fmt.Errorf("--vcpus must not be negative, got %d", o.vcpus)
	}
	return nil
}

// Run calculates max pods for each instance type and prints the results.
func (o *maxPodsOptions) Run(types []string) error {
	var results []eni.Result
	for _, name := range types {
		it, err := eni.Lookup(name)
		if err != nil {
			return err
		}
		opts := o.eni
		switch {
		case o.vcpus > 0:
			opts.VCPUs, opts.VCPUSource = o.vcpus, "--vcpus"
		default:
			if n, ok := eni.EstimateVCPUs(name); ok {
				opts.VCPUs, opts.VCPUSource = n, eni.VCPUSourceEstimate
			}
		}
		r, err := eni.Calculate(it, opts)
		if errors.Is(err, eni.ErrVCPUsUnknown) {
			return fmt.Errorf("%w; pass --vcpus N (or --show-max-allowed)", err)
		}
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	return printMaxPods(o.g.streams.Out, o.output.Output, results)
}

func printMaxPods(w io.Writer, output string, results []eni.Result) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
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
		}
		return nil
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: max pods %d\n", r.InstanceType, r.MaxPods)
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
		fmt.Fprintf(&b, "  mode:        %s\n", mode)
		fmt.Fprintf(&b, "  ENIs:        %d for pods of %d on the default network card", r.ENIsForPods, r.ENIs)
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
			fmt.Fprintf(&b, " (%s)", strings.Join(minus, ", "))
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  addresses:   %d pod IPs per ENI (%d IPv4 per ENI - 1", r.PodIPsPerENI, r.IPv4PerENI)
		if r.PrefixDelegation {
			fmt.Fprintf(&b, ", x%d per prefix", eni.IPsPerPrefix)
		}
		b.WriteString(")\n")
		fmt.Fprintf(&b, "  IP limit:    %d x %d + %d = %d\n", r.ENIsForPods, r.PodIPsPerENI, eni.HostNetworkPods, r.MaxAllowed)
		switch {
		case r.Ceiling > 0:
			fmt.Fprintf(&b, "  ceiling:     %d (%d vCPUs, %s)", r.Ceiling, r.VCPUs, r.VCPUSource)
			if r.Capped {
				b.WriteString(": applied")
			}
			b.WriteString("\n")
		case r.MaxAllowed > eni.CeilingLowCPU:
			b.WriteString("  ceiling:     not applied (--show-max-allowed)\n")
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  note:        %s\n", n)
		}
		fmt.Fprintf(&b, "  data:        %s (%s hypervisor", eni.DataSource, orDash(r.Hypervisor))
		if r.BareMetal {
			b.WriteString(", bare metal")
		}
		b.WriteString(")\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "no"
	}
	return s
}
