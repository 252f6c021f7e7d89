package eni

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// TestReferenceAgreement compares the pinned instance table with the published max-pods table and
// the EKS AMI's instance data for every type present in both, lists every disagreement and fails on
// any. A module upgrade that changes limits shows up here first.
func TestReferenceAgreement(t *testing.T) {
	t.Run("eni-max-pods.txt", func(t *testing.T) {
		f, err := os.Open("testdata/eni-max-pods.txt")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		compared, missing := 0, 0
		var bad []string
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			fields := strings.Fields(text)
			if len(fields) != 2 {
				t.Fatalf("line %d: malformed %q", line, text)
			}
			want, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			it, err := Lookup(fields[0])
			if errors.Is(err, ErrUnknownInstanceType) {
				missing++
				continue
			}
			if err != nil {
				bad = append(bad, fields[0]+": "+err.Error())
				continue
			}
			compared++
			r, err := Calculate(it, Options{ShowMaxAllowed: true})
			if err != nil {
				bad = append(bad, fields[0]+": "+err.Error())
				continue
			}
			if r.MaxPods != want {
				bad = append(bad, fields[0]+": file "+strconv.Itoa(want)+", table "+strconv.Itoa(r.MaxPods)+
					" ("+strconv.Itoa(it.ENIs)+" ENIs x "+strconv.Itoa(it.IPv4PerENI)+" IPv4)")
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("compared %d types, %d in the file only", compared, missing)
		// The files overlap on well over a thousand types; a tiny overlap means a broken lookup.
		if compared < 1000 {
			t.Errorf("only %d types compared", compared)
		}
		for _, b := range bad {
			t.Error(b)
		}
	})
	t.Run("instance-info.jsonl", func(t *testing.T) {
		f, err := os.Open("testdata/instance-info.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		compared := 0
		var bad []string
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			var rec struct {
				InstanceType              string `json:"instanceType"`
				DefaultMaxENIs            int    `json:"defaultMaxENIs"`
				IPv4AddressesPerInterface int    `json:"ipv4AddressesPerInterface"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			it, err := Lookup(rec.InstanceType)
			if errors.Is(err, ErrUnknownInstanceType) {
				continue
			}
			if err != nil {
				bad = append(bad, rec.InstanceType+": "+err.Error())
				continue
			}
			compared++
			if it.ENIs != rec.DefaultMaxENIs || it.IPv4PerENI != rec.IPv4AddressesPerInterface {
				bad = append(bad, rec.InstanceType+": file "+strconv.Itoa(rec.DefaultMaxENIs)+" ENIs x "+strconv.Itoa(rec.IPv4AddressesPerInterface)+
					", table "+strconv.Itoa(it.ENIs)+" x "+strconv.Itoa(it.IPv4PerENI))
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("compared %d types", compared)
		if compared < 1000 {
			t.Errorf("only %d types compared", compared)
		}
		for _, b := range bad {
			t.Error(b)
		}
	})
}

func TestDataSourceMatchesGoMod(t *testing.T) {
	// Test binaries carry no dependency list in their build info, so read go.mod itself.
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/aws/amazon-vpc-resource-controller-k8s"
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == mod {
			if want := mod + "/pkg/aws/vpc@" + f[1]; want != DataSource {
				t.Fatalf("DataSource = %q, go.mod requires %q", DataSource, want)
			}
			return
		}
	}
	t.Fatalf("go.mod does not require %s", mod)
}

func mustLookup(t *testing.T, name string) InstanceType {
	t.Helper()
	it, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestCalculate(t *testing.T) {
	tests := []struct {
		name       string
		typ        string
		opts       Options
		want       int
		wantMax    int
		wantPD     bool
		wantCapped bool
		wantNote   string
		wantErr    string
	}{
		// The worked examples.
		{name: "m5.large default", typ: "m5.large", want: 29, wantMax: 29},
		{name: "m5.large custom networking", typ: "m5.large", opts: Options{CustomNetworking: true}, want: 20, wantMax: 20},
		{name: "m5.large prefix delegation", typ: "m5.large", opts: Options{PrefixDelegation: true, CNIVersion: "1.18.0", VCPUs: 2}, want: 110, wantMax: 434, wantPD: true, wantCapped: true},
		{name: "m5.large prefix delegation max allowed", typ: "m5.large", opts: Options{PrefixDelegation: true, CNIVersion: "1.18.0", ShowMaxAllowed: true}, want: 434, wantMax: 434, wantPD: true},
		// Custom networking and prefix delegation together: (3-1) * 9 * 16 + 2.
		{name: "m5.large both", typ: "m5.large", opts: Options{PrefixDelegation: true, CustomNetworking: true, ShowMaxAllowed: true}, want: 290, wantMax: 290, wantPD: true, wantNote: "assuming"},
		// Prefix delegation needs CNI 1.9: 1.8 falls back to secondary IPs.
		{name: "old CNI", typ: "m5.large", opts: Options{PrefixDelegation: true, CNIVersion: "1.8.0"}, want: 29, wantMax: 29, wantNote: "needs VPC CNI 1.9.0"},
		// The script would refuse 2.0 (minor 0 < 9); the numeric comparison accepts it.
		{name: "CNI 2.0", typ: "m5.large", opts: Options{PrefixDelegation: true, CNIVersion: "v2.0.0-eksbuild.1", VCPUs: 2}, want: 110, wantMax: 434, wantPD: true, wantCapped: true},
		// Xen types never get prefix delegation.
		{name: "xen", typ: "m4.large", opts: Options{PrefixDelegation: true, CNIVersion: "1.19.0"}, want: 20, wantMax: 20, wantNote: "needs a Nitro instance"},
		// Above 30 vCPUs the ceiling is 250: m5.24xlarge is 15 ENIs x 50.
		{name: "big ceiling", typ: "m5.24xlarge", opts: Options{VCPUs: 96}, want: 250, wantMax: 737, wantCapped: true},
		{name: "30 vCPUs is low", typ: "m5.24xlarge", opts: Options{VCPUs: 30}, want: 110, wantMax: 737, wantCapped: true},
		{name: "31 vCPUs is high", typ: "m5.24xlarge", opts: Options{VCPUs: 31}, want: 250, wantMax: 737, wantCapped: true},
		{name: "vcpus unknown", typ: "m5.24xlarge", wantErr: "vCPU count unknown"},
		// Below 110 the vCPU count is irrelevant and not required.
		{name: "small needs no vcpus", typ: "t3.medium", want: 17, wantMax: 17},
		// MAX_ENI caps the ENIs before custom networking takes one.
		{name: "max eni", typ: "m5.24xlarge", opts: Options{MaxENI: 2, CustomNetworking: true}, want: 51, wantMax: 51},
		{name: "max eni above instance", typ: "m5.large", opts: Options{MaxENI: 9}, want: 29, wantMax: 29},
		{name: "reserved enis", typ: "m5.large", opts: Options{ReservedENIs: 1}, want: 20, wantMax: 20},
		{name: "reserved plus custom", typ: "m5.large", opts: Options{ReservedENIs: 1, CustomNetworking: true}, want: 11, wantMax: 11},
		{name: "no eni left", typ: "m5.large", opts: Options{ReservedENIs: 3}, want: 2, wantMax: 2, wantNote: "no ENI is left"},
		{name: "too many reserved", typ: "m5.large", opts: Options{ReservedENIs: 3, CustomNetworking: true}, wantErr: "are reserved"},
		{name: "negative reserved", typ: "m5.large", opts: Options{ReservedENIs: -1}, wantErr: "must not be negative"},
		{name: "bad version", typ: "m5.large", opts: Options{CNIVersion: "one.two"}, wantErr: "invalid VPC CNI version"},
		// Bare metal: the calculator checks the hypervisor ("" for metal), the CNI does not.
		{name: "metal calculator", typ: "m5.metal", opts: Options{PrefixDelegation: true, ShowMaxAllowed: true}, want: 737, wantMax: 737, wantNote: "also delegates prefixes on bare metal"},
		{name: "metal cni", typ: "m5.metal", opts: Options{PrefixDelegation: true, ShowMaxAllowed: true, BareMetalPrefixDelegation: true}, want: 11762, wantMax: 11762, wantPD: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Calculate(mustLookup(t, tc.typ), tc.opts)
			if textcheck.WantError(t, err, tc.wantErr) {
				return
			}
			if r.MaxPods != tc.want || r.MaxAllowed != tc.wantMax || r.PrefixDelegation != tc.wantPD || r.Capped != tc.wantCapped {
				t.Fatalf("got maxPods %d maxAllowed %d pd %v capped %v, want %d %d %v %v (%+v)",
					r.MaxPods, r.MaxAllowed, r.PrefixDelegation, r.Capped, tc.want, tc.wantMax, tc.wantPD, tc.wantCapped, r)
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tc.wantNote) {
				t.Fatalf("notes %q lack %q", r.Notes, tc.wantNote)
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"m5.larg", "did you mean m5.large?"},
		{"M5.Larg", "did you mean m5.large?"},
		{"c6i.2xlarg", "did you mean c6i.2xlarge?"},
		{"nosuchfamily.large", "not in the instance limits table"},
		{"", "empty name"},
	} {
		_, err := Lookup(tc.in)
		if !errors.Is(err, ErrUnknownInstanceType) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Lookup(%q) = %v, want ErrUnknownInstanceType containing %q", tc.in, err, tc.want)
		}
	}
}

func TestMultiCardUsesDefaultCard(t *testing.T) {
	// p5.48xlarge has many network cards; only the default one carries pod addresses.
	it := mustLookup(t, "p5.48xlarge")
	if it.NetworkCards < 2 || it.ENIs >= it.TotalENIs {
		t.Fatalf("p5.48xlarge: %+v, want several cards and default-card ENIs below the total", it)
	}
}

func TestEstimateVCPUs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"m5.large", 2, true},
		{"m5.xlarge", 4, true},
		{"m5.8xlarge", 32, true},
		{"t3.micro", 2, true},
		{"c7i.metal-24xl", 96, true},
		{"m5.metal", 96, true}, // the largest m5 size is 24xlarge
		{"a1.metal", 16, true}, // a1.4xlarge
		{"hpc7g.4xlarge", 0, false},
		{"weird", 0, false},
		{"m5.hugeish", 0, false},
		{"x.metal-xl", 0, false},
	} {
		got, ok := EstimateVCPUs(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("EstimateVCPUs(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  bool
	}{
		{"1.18.3", Version{1, 18, 3}, false},
		{"v1.19.0-eksbuild.1", Version{1, 19, 0}, false},
		{"1.9", Version{1, 9, 0}, false},
		{"1", Version{}, true},
		{"1.x", Version{}, true},
		{"1..2", Version{}, true},
		{"1.2.3.4", Version{}, true},
	} {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v", tc.in, got, err)
		}
	}
	v, err := VersionFromImage("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1")
	if err != nil || v != (Version{1, 19, 2}) {
		t.Errorf("VersionFromImage = %v, %v", v, err)
	}
	for _, img := range []string{"registry:5000/amazon-k8s-cni", "amazon-k8s-cni@sha256:abc", "amazon-k8s-cni:latest"} {
		if _, err := VersionFromImage(img); err == nil {
			t.Errorf("VersionFromImage(%q) succeeded", img)
		}
	}
}

func TestParseSettings(t *testing.T) {
	s := ParseSettings(map[string]string{
		EnvCustomNetworking: "true",
		EnvPrefixDelegation: "yes", // not a Go bool: the CNI logs an error and uses false
		EnvMaxENI:           "0",
		EnvWarmIPTarget:     " 5",
		EnvIPCooldownPeriod: "0",
		EnvClusterEndpoint:  "https://example.eks.amazonaws.com",
	})
	if !s.CustomNetworking || s.PrefixDelegation || len(s.InvalidBools) != 1 {
		t.Fatalf("bools: %+v", s)
	}
	if s.EffectiveMaxENI() != 0 {
		t.Errorf("MAX_ENI=0 must be ignored")
	}
	if !s.WarmIPTarget.Set || s.WarmIPTarget.Valid {
		t.Errorf("WARM_IP_TARGET=' 5' must be set but invalid: %+v", s.WarmIPTarget)
	}
	if !s.IPCooldownPeriod.Valid || s.IPCooldownPeriod.Value != 0 {
		t.Errorf("cooldown: %+v", s.IPCooldownPeriod)
	}
	if !s.ClusterEndpointSet || s.WarmENITarget.Set {
		t.Errorf("%+v", s)
	}
}

// TestResultJSONSchema: the -o json document of maxpods, one object or an array of them, carries
// apiVersion/kind and matches docs/schemas/maxpods.schema.json.
func TestResultJSONSchema(t *testing.T) {
	var results []Result
	for _, tc := range []struct {
		typ  string
		opts Options
	}{
		{"m5.large", Options{}},
		{"m5.large", Options{PrefixDelegation: true, CNIVersion: "1.18.0", VCPUs: 2}},
		{"c6i.32xlarge", Options{CustomNetworking: true, VCPUs: 128}},
	} {
		it, err := Lookup(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Calculate(it, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		one, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, Kind, one)
	}
	all, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, Kind, all)
}

// TestLookupCaseInsensitive: EC2 names are lower case; an operator typing M5.Large (or with
// surrounding space) gets m5.large, not an unknown type.
func TestLookupCaseInsensitive(t *testing.T) {
	for _, in := range []string{"m5.large", "M5.Large", " M5.LARGE "} {
		it, err := Lookup(in)
		if err != nil || it.Name != "m5.large" || it.Source != SourceTable {
			t.Errorf("Lookup(%q) = %+v, %v; want m5.large from the table", in, it, err)
		}
	}
}

// TestCatalog: a type learnt from EC2 is found (any case) and its result says so, with EC2's
// real vCPU count deciding the ceiling; a table type keeps the table's data and takes EC2's vCPU
// count only; the nil catalog is the table alone.
func TestCatalog(t *testing.T) {
	future := InstanceType{Name: "M9X.48XLARGE", ENIs: 15, TotalENIs: 30, IPv4PerENI: 50, Hypervisor: "nitro",
		NetworkCards: 2, Source: SourceEC2, VCPUs: 192}
	cat := NewCatalog(future, InstanceType{Name: "m5.large", ENIs: 99, IPv4PerENI: 99, Source: SourceEC2, VCPUs: 2})

	if _, err := (*Catalog)(nil).Lookup("m9x.48xlarge"); !errors.Is(err, ErrUnknownInstanceType) {
		t.Fatalf("nil catalog knows m9x.48xlarge: %v", err)
	}
	it, err := cat.Lookup("m9x.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Calculate(it, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxPods != 250 || r.MaxAllowed != 15*49+2 || r.VCPUs != 192 || r.VCPUSource != VCPUSourceEC2 || r.DataSource != SourceEC2 {
		t.Errorf("EC2 type: %+v", r)
	}

	m5, err := cat.Lookup("M5.large")
	if err != nil {
		t.Fatal(err)
	}
	if m5.ENIs != 3 || m5.IPv4PerENI != 10 || m5.Source != SourceTable || m5.VCPUs != 2 {
		t.Errorf("table type with EC2 vCPUs: %+v, want the table's 3x10 and EC2's 2 vCPUs", m5)
	}
	if r, _ := Calculate(m5, Options{}); r.DataSource != DataSource {
		t.Errorf("table type: data source %q, want %q", r.DataSource, DataSource)
	}
}
