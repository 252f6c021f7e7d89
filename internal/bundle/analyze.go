package bundle

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Options tune an analysis.
type Options struct {
	Limits
	// InstanceType overrides the type found in the bundle (ipamd.log); needed when it is absent.
	InstanceType string
	// ReservedENIs are ENIs kept from pods besides custom networking and the trunk ENI.
	ReservedENIs int
	// IODelayThreshold is the aggregated block IO delay from which a process is reported
	// (default 10 s).
	IODelayThreshold time.Duration
	// UserData is the node's EC2 user data (--user-data): a shell script, MIME multi-part or an
	// AL2023 NodeConfig. UserDataName labels it.
	UserData     []byte
	UserDataName string
	// MinCNIVersion is the VPC CNI version below which a warning is given (zero: doctor's default).
	MinCNIVersion eni.Version
	// Now stamps the report (default time.Now).
	Now time.Time
}

// DefaultIODelayThreshold: ten seconds of a process's life spent waiting for block IO.
const DefaultIODelayThreshold = 10 * time.Second

// AnalyzeFile analyses a bundle given as a .tar.gz, as its unpacked directory, or a kubelet
// journal (journalctl -u kubelet output, gzip-compressed or not). Nothing is ever written to disk.
func AnalyzeFile(file string, o Options) (*findings.Report, error) {
	rep, _, err := AnalyzeFileStory(file, o)
	return rep, err
}

// AnalyzeFileStory is AnalyzeFile with the node's story besides the report: who the bundle is
// from and when it booted (story.go), for `nodekeeper explain --bundle`.
func AnalyzeFileStory(file string, o Options) (*findings.Report, *Story, error) {
	if err := o.checkUserData(); err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil, nil, err
	}
	a := newAnalysis(o.withDefaults())
	name := filepath.Base(file)
	if st.IsDir() {
		a.kind = InputDirectory
		if err := walkDir(file, o.Limits, a.visit); err != nil {
			return nil, nil, err
		}
		if err := a.recognisedAny(); err != nil {
			return nil, nil, err
		}
		name = filepath.Base(filepath.Clean(file)) + "/"
	} else {
		if !st.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("%s is not a regular file or a directory", file)
		}
		f, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if err := a.analyzeStream(f, name); err != nil {
			return nil, nil, err
		}
	}
	return a.finish(name), a.story(name), nil
}

// checkUserData refuses --user-data that holds nothing cloud-init or nodeadm would run, before
// the bundle is read.
func (o Options) checkUserData() error {
	if o.UserData == nil {
		return nil
	}
	return CheckUserData(o.userDataName(), o.UserData)
}

func (o Options) userDataName() string {
	if o.UserDataName == "" {
		return "user-data"
	}
	return o.UserDataName
}

func (o Options) withDefaults() Options {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.IODelayThreshold <= 0 {
		o.IODelayThreshold = DefaultIODelayThreshold
	}
	return o
}

// Analyze reads a bundle from r (gzip-compressed tar) or a kubelet journal (gzip-compressed or
// plain) and returns its findings. name labels the report.
func Analyze(r io.Reader, name string, o Options) (*findings.Report, error) {
	if err := o.checkUserData(); err != nil {
		return nil, err
	}
	a := newAnalysis(o.withDefaults())
	if err := a.analyzeStream(r, name); err != nil {
		return nil, err
	}
	return a.finish(name), nil
}

// finish runs the checks that combine members and builds the report.
func (a *analysis) finish(name string) *findings.Report {
	if a.o.UserData != nil {
		a.readUserData(a.o.userDataName(), a.o.UserData)
	}
	// Members come in the input's order; what is listed from several of them is sorted.
	slices.Sort(a.configErrs)
	slices.Sort(a.envErrs)
	rep := findings.NewReport("bundle", name, a.o.Now, a.sections()...)
	rep.Partial = a.partial
	a.report(rep)
	return rep
}

// sections are the report's sections for this input: a journal shows only what it can be
// checked for, so that an empty section never reads as "checked, nothing found".
func (a *analysis) sections() []findings.SectionSpec {
	if a.kind != InputJournal {
		return Sections
	}
	keep := map[string]bool{SectionKubeletLog: true, SectionCNILog: true}
	if a.userDataRead {
		keep[SectionBootstrap] = true
	}
	if a.userDataSet {
		keep[rules.SectionNodes], keep[rules.SectionKubelet], keep[rules.SectionAWSNode] = true, true, true
	}
	var out []findings.SectionSpec
	for _, s := range Sections {
		if keep[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// analysis gathers facts while members stream by; checks that combine members run at the end.
type analysis struct {
	o     Options
	lines *lineReader
	kind  InputKind

	patterns       []*pattern // every log pattern once, in report order
	statusZombie   zombieLines
	evictionZombie zombieLines
	tracedLines    int // "+ cmd" lines in cloud-init-output.log

	// files counts the regular files of a bundle, recognised those a check reads; kubeletSeen
	// says a journal holds a line of the kubelet.
	files, recognised int
	kubeletSeen       bool
	// partial says why only part of the input was read (findings.Report.Partial).
	partial string

	// OS and provisioner hints for the max-pods fix (rules.MaxPodsFix).
	osHint   rules.NodeOS
	provHint rules.Provisioner
	// os is what the bundle says of the node's OS (nodeos.go), for NK639.
	os nodeOS

	// --user-data: read, the kubelet settings it gives, and parts that could not be read.
	userDataRead     bool
	userDataCfg      rules.KubeletConfig
	userDataSet      bool
	userDataSrc      string
	userDataProblems []string

	kubeletLog *scanner
	cniLog     *scanner
	bootstrap  *scanner

	instanceID     string
	hostname       string // the host of the kubelet journal's first line (story.go)
	instanceType   string
	instanceSource string
	instanceAge    string // cniLogAge of instanceSource
	cniVersion     string
	cniVersionFrom string
	cniVersionAge  string // cniLogAge of cniVersionFrom
	vcpus          int

	configs     map[string]rules.KubeletConfig // base files by path
	dropins     map[string]rules.KubeletConfig
	configErrs  []string
	flags       rules.KubeletConfig
	flagsSeen   bool
	runtimeHint []string // evidence that containerd is the runtime

	env       map[string]string
	envSource string
	envFull   bool
	envErrs   []string

	ioRead bool
	ioTop  []ioProc

	// What the boot logs say about the user data's run (cloudinit.go), and when the node
	// booted (boot.go).
	ci   cloudInitFacts
	boot bootFacts
}

type ioProc struct {
	pid   int
	name  string
	delay time.Duration
}
