//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/collectortar"
)

// collectorTarball packs files as eks-log-collector.sh does, at the seed's collection time.
func collectorTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	return collectortar.TarGz(t, time.Date(2024, 3, 4, 9, 15, 0, 0, time.UTC), collectortar.Layout(files))
}

type bundleReport struct {
	Tool     string `json:"tool"`
	ExitCode int    `json:"exitCode"`
	Sections []struct {
		Findings []struct {
			Code     string `json:"code"`
			Severity string `json:"severity"`
		} `json:"findings"`
	} `json:"sections"`
}

func (r bundleReport) codes() []string {
	var out []string
	for _, s := range r.Sections {
		for _, f := range s.Findings {
			out = append(out, f.Code+":"+f.Severity)
		}
	}
	sort.Strings(out)
	return out
}

func TestBundle(t *testing.T) {
	u := newUser(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(u.dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	clean := write("eks_i-0fedcba9876543210_2024-03-04_0915-UTC_0.7.8.tar.gz", collectorTarball(t, collectortar.CleanNode()))

	sick := collectortar.CleanNode()
	sick["kubelet/kubelet.log"] += "Mar 04 09:12:01 ip-10-0-1-2 kubelet[3121]: E0304 09:12:01.123 3121 pod_workers.go:1301] \"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"app\\\" with ErrImagePull: \\\"pull QPS exceeded\\\"\" pod=\"default/app-7d9c-abcde\"\n"
	sickName := write("eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8.tar.gz", collectorTarball(t, sick))

	t.Run("clean", func(t *testing.T) {
		r := u.expect(exitOK, "bundle", clean, "-o", "json")
		rep := decode[bundleReport](t, r, "BundleReport")
		if rep.Tool != "bundle" || rep.ExitCode != 0 || len(rep.codes()) != 0 {
			t.Errorf("a clean node's bundle: tool %q exitCode %d findings %v:\n%s", rep.Tool, rep.ExitCode, rep.codes(), r)
		}
		r = u.expect(exitOK, "bundle", clean)
		mustContain(t, r, r.stdout, "i-0fedcba9876543210")
	})

	t.Run("pull QPS exceeded", func(t *testing.T) {
		r := u.expect(exitFindings, "bundle", sickName, "-o", "json")
		rep := decode[bundleReport](t, r, "BundleReport")
		if got := strings.Join(rep.codes(), " "); got != "NK601:warning" || rep.ExitCode != exitFindings {
			t.Errorf("findings %q exitCode %d, want NK601:warning and 3:\n%s", got, rep.ExitCode, r)
		}
		r = u.expect(exitFindings, "bundle", sickName)
		mustContain(t, r, r.stdout, "NK601", "pull QPS exceeded")
		u.expect(exitOK, "bundle", sickName, "--fail-on", "error")
		u.expect(exitOK, "bundle", sickName, "--ignore", "NK601")
	})

	t.Run("unpacked directory", func(t *testing.T) {
		for name, body := range sick {
			p := filepath.Join(u.dir, "unpacked", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := u.expect(exitFindings, "bundle", "unpacked", "-o", "json")
		rep := decode[bundleReport](t, r, "BundleReport")
		if got := strings.Join(rep.codes(), " "); got != "NK601:warning" {
			t.Errorf("the unpacked bundle: findings %q, want those of its tarball:\n%s", got, r)
		}
	})

	t.Run("truncated", func(t *testing.T) {
		data := collectorTarball(t, sick)
		name := write("truncated.tar.gz", data[:len(data)/2])
		r := u.expect(exitFailed, "bundle", name)
		mustContain(t, r, r.stderr, "error: ", name)
	})

	t.Run("usage", func(t *testing.T) {
		u.expect(exitUsage, "bundle")
		u.expect(exitUsage, "bundle", clean, "--instance-type", "m5.enormous")
	})
}
