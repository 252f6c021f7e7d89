// Package buildinfo says which nodekeeper this is: version, commit and build date, injected at link
// time by the Makefile and the release configuration, plus the Go version and platform. The
// version command prints it and the controller exports it as the nodekeeper_build_info gauge.
//
// The Makefile links with
//
//	-X github.com/nodekeeper/nodekeeper/internal/buildinfo.version=$(VERSION)
//	-X github.com/nodekeeper/nodekeeper/internal/buildinfo.commit=$(COMMIT)
//	-X github.com/nodekeeper/nodekeeper/internal/buildinfo.date=$(BUILD_DATE)
//
// A binary built without them (go build, go install …@version) falls back to what the Go
// toolchain recorded: the module version for go install, the VCS revision and commit time for a
// build inside a checkout.
package buildinfo

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// Set by the linker (-X); see the package doc.
var (
	version = ""
	commit  = ""
	date    = ""
)

// APIVersion and Kind of the machine-readable version document.
const (
	APIVersion = typemeta.APIVersion
	Kind       = "Version"
)

// Info is what `nodekeeper version -o json|yaml` prints.
type Info struct {
	metav1.TypeMeta `json:",inline"`
	// Version is the release ("v0.4.0"), `git describe` output for a development build, or "dev".
	Version string `json:"version"`
	// Commit is the full git commit hash, or "unknown".
	Commit string `json:"commit"`
	// BuildDate is when the binary was built (RFC 3339, UTC), or "unknown".
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the build information of the running binary.
func Get() Info {
	return resolve(version, commit, date, readBuildInfo())
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// resolve prefers the linker's values and falls back on the toolchain's record, field by field.
func resolve(v, c, d string, bi *debug.BuildInfo) Info {
	info := Info{
		TypeMeta:  metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Version:   v,
		Commit:    c,
		BuildDate: d,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version // go install github.com/nodekeeper/nodekeeper/cmd/nodekeeper@v0.4.0
		}
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.BuildDate == "" {
					info.BuildDate = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && c == "" && info.Commit != "" {
			info.Commit += "-dirty"
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.BuildDate == "" {
		info.BuildDate = "unknown"
	}
	return info
}

// String is the one-line form used in user agents and logs: "v0.4.0 (abc1234, linux/amd64)".
func (i Info) String() string {
	short := i.Commit
	if len(short) > 12 {
		short = short[:12] // hex digits: a byte cut is a character cut
	}
	return fmt.Sprintf("%s (%s, %s)", i.Version, short, i.Platform)
}

// Formats are the -o values of the version command.
var Formats = []string{"text", "json", "yaml"}

// Print writes i as text (one field per line, like `kubectl version`), JSON or YAML.
func Print(w io.Writer, i Info, format string) error {
	switch format {
	case "", "text":
		_, err := fmt.Fprintf(w, "nodekeeper %s\n  commit:     %s\n  built:      %s\n  go:         %s\n  platform:   %s\n",
			i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform)
		return err
	case "json":
		b, err := json.MarshalIndent(i, "", "    ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(textsafe.AppendJSONEscaped(nil, b), '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(i)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q (want one of: %s)", format, strings.Join(Formats, ", "))
}
