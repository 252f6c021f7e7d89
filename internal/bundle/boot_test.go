package bundle

import (
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// refusedAt is the plugin's gRPC dial to ipamd refused at t (the seed's plugin.log line,
// cmd/routed-eni-cni-plugin/cni.go in aws/amazon-vpc-cni-k8s).
func refusedAt(t time.Time) string {
	return `{"level":"error","ts":"` + t.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `","caller":"routed-eni-cni-plugin/cni.go:283","msg":"Error received from AddNetwork gRPC call for container 5f3c: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing dial tcp 127.0.0.1:50051: connect: connection refused\""}` + "\n"
}

// TestBootIODelay: NK622 relates the IO delay (NK621) to the boot, which cloud-init's logs
// place in time, and to ipamd's first connection refused (NK611) after it, from the tarball and
// the directory alike; without a boot time it says why it could not, and it says nothing when
// the refusals came long after the boot or nothing waited for IO.
func TestBootIODelay(t *testing.T) {
	// The seed's boot: cloud-init's final stage at 09:11:20 after 18.30 s up, T = 09:11:01.7.
	boot := time.Date(2024, 3, 4, 9, 11, 1, 700_000_000, time.UTC)
	seedStage := "Cloud-init v. 19.3-46.amzn2 running 'modules:final' at Mon, 04 Mar 2024 09:11:20 +0000. Up 18.30 seconds.\n"
	noRefusal := `{"level":"error","caller":"routed-eni-cni-plugin/cni.go:301","msg":"Failed to assign an IP address to container 9d2f"}` + "\n"
	var many strings.Builder
	for i := 0; i < maxRefusals+904; i++ {
		many.WriteString(refusedAt(boot.Add(20*time.Second + time.Duration(i)*100*time.Millisecond)))
	}
	// As many, a second apart: the earliest kept is 15 minutes after the boot.
	var manyLong strings.Builder
	for i := 0; i < maxRefusals+904; i++ {
		manyLong.WriteString(refusedAt(boot.Add(20*time.Second + time.Duration(i)*time.Second)))
	}
	for _, tc := range []struct {
		name   string
		change func(files map[string]string)
		want   string   // NK622's severity, "" for none
		says   []string // in its message
	}{
		{name: "the seed: boot from cloud-init-output.log, refused in plugin.log", change: func(map[string]string) {},
			want: "warning", says: []string{"throttled during boot (kubelet 45.21s, containerd 30.12s, aws-k8s-agent 15.05s and 1 more waiting for block IO", "came at T+30s (2024-03-04 09:11:32 UTC), 30 s after boot (T = 2024-03-04 09:11:02 UTC)"}},
		{name: "boot from /proc/stat's btime, without cloud-init's line", change: func(f map[string]string) {
			f[pCloudInitOut] = strings.Replace(f[pCloudInitOut], seedStage, "", 1)
			f[pProcStat] += "btime 1709543462\nprocesses 5301\n" // 2024-03-04T09:11:02Z
		}, want: "warning", says: []string{"came at T+30s (2024-03-04 09:11:32 UTC)", "(T = 2024-03-04 09:11:02 UTC)"}},
		{name: "the kernel's boot wins over cloud-init's", change: func(f map[string]string) {
			f[pCloudInitOut] += "Cloud-init v. 19.3-46.amzn2 running 'init' at Mon, 04 Mar 2024 09:20:10 +0000. Up 8.00 seconds.\n"
			f[pProcStat] += "btime 1709543462\n"
		}, want: "warning", says: []string{"(T = 2024-03-04 09:11:02 UTC)"}},
		{name: "boot from cloud-init.log (cloud-init 22.2.2's layout)", change: func(f map[string]string) {
			f[pCloudInitOut] = strings.Replace(f[pCloudInitOut], seedStage, "", 1)
			f[pCloudInitLog] = "2024-03-04 09:11:10,001 - util.py[DEBUG]: Cloud-init v. 22.2.2 running 'init' at Mon, 04 Mar 2024 09:11:10 +0000. Up 8.00 seconds.\n"
		}, want: "warning", says: []string{"came at T+30s (2024-03-04 09:11:32 UTC)", "(T = 2024-03-04 09:11:02 UTC)"}},
		{name: "refused only in the kubelet's journal, whose times have no year", change: func(f map[string]string) {
			f["var_log/aws-routed-eni/plugin.log"] = noRefusal
			f[pKubeletLog] += `Mar 04 09:12:10 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:12:10.100 3121 log.go:32] "RunPodSandbox from runtime service failed" err="plugin type=\"aws-cni\" failed (add): add cmd: Error received from AddNetwork gRPC call: dial tcp 127.0.0.1:50051: connect: connection refused"` + "\n"
		}, want: "warning", says: []string{"came at T+68s (2024-03-04 09:12:10 UTC)"}},
		{name: "a reboot: the latest boot counts", change: func(f map[string]string) {
			f[pCloudInitOut] += "Cloud-init v. 19.3-46.amzn2 running 'init' at Mon, 04 Mar 2024 10:00:10 +0000. Up 8.00 seconds.\n"
			f["var_log/aws-routed-eni/plugin.log"] += refusedAt(time.Date(2024, 3, 4, 10, 1, 2, 0, time.UTC))
		}, want: "warning", says: []string{"came at T+60s (2024-03-04 10:01:02 UTC)", "(T = 2024-03-04 10:00:02 UTC)"}},
		{name: "more refusals than kept: the first is bounded", change: func(f map[string]string) {
			f["var_log/aws-routed-eni/plugin.log"] = many.String()
		}, want: "warning", says: []string{"came by T+110s"}},
		{name: "more refusals than kept, for longer than the boot window", change: func(f map[string]string) {
			f["var_log/aws-routed-eni/plugin.log"] = manyLong.String()
		}, want: "skipped", says: []string{"more connection refused lines came than the 4096 kept", "the first one after the boot is not known"}},
		{name: "no boot time in the bundle", change: func(f map[string]string) {
			f[pCloudInitOut] = strings.Replace(f[pCloudInitOut], seedStage, "Cloud-init v. 19.3-46.amzn2 running 'modules:final'\n", 1)
			f[pProcStat] += "btime not-a-number\n"
		}, want: "skipped", says: []string{"does not say when the node booted", pProcStat, pCloudInitOut, pCloudInitLog}},
		{name: "refusals only before the last boot", change: func(f map[string]string) {
			f[pCloudInitOut] += "Cloud-init v. 19.3-46.amzn2 running 'init' at Mon, 04 Mar 2024 10:00:10 +0000. Up 8.00 seconds.\n"
		}, want: "skipped", says: []string{"no connection refused line with a time is at or after the last boot (2024-03-04T10:00:02Z)"}},
		{name: "refused an hour after the boot: not the boot's IO", change: func(f map[string]string) {
			f["var_log/aws-routed-eni/plugin.log"] = refusedAt(boot.Add(time.Hour))
		}},
		{name: "nothing waited long for IO", change: func(f map[string]string) {
			f[pIOThrottling] = "PID Name Block IO Delay (centisconds)\n3121 (kubelet) 20\n"
		}},
		{name: "ipamd never refused", change: func(f map[string]string) {
			f["var_log/aws-routed-eni/plugin.log"] = noRefusal
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := seedFiles()
			tc.change(files)
			for input, rep := range bothInputs(t, files) {
				got := ""
				for _, f := range rep.Findings() {
					if f.Code == RuleBootIODelay.Code {
						got = f.Severity.String()
						textcheck.Contains(t, input+" NK622", f.Message, tc.says, nil)
					}
				}
				if got != tc.want {
					t.Errorf("%s: NK622 %q, want %q (%v)", input, got, tc.want, findingstest.ReportCodes(rep))
				}
			}
		})
	}
}

// TestLineTime: the times NK622 reads from the lines that show ipamd refusing connections.
func TestLineTime(t *testing.T) {
	for _, tc := range []struct {
		line       string
		want       string // RFC 3339, year 0 for a line without one
		year, fail bool
	}{
		{line: `{"level":"error","ts":"2024-03-04T09:11:31.512Z","msg":"connect: connection refused"}`, want: "2024-03-04T09:11:31.512Z", year: true},
		{line: `{"level":"error","ts":"2024-03-04T11:11:31.512+0200","msg":"x"}`, want: "2024-03-04T09:11:31.512Z", year: true},
		{line: `2024-03-04T09:11:40+0000 ip-10-0-12-34 kubelet[3121]: E0304 09:11:40.114 x`, want: "2024-03-04T09:11:40Z", year: true},
		{line: `Mar 04 09:11:40 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:11:40.114 3121 x`, want: "0000-03-04T09:11:40Z"},
		{line: `Mar  4 09:11:40 host kubelet[3121]: x`, want: "0000-03-04T09:11:40Z"},
		{line: `E0304 09:11:40.114512 3121 log.go:32] "RunPodSandbox from runtime service failed"`, want: "0000-03-04T09:11:40.114512Z"},
		{line: `dial tcp 127.0.0.1:50051: connect: connection refused`, fail: true},
		{line: `{"ts":"2024-13-04T09:11:31Z"}`, fail: true},
		{line: `Feb 30 09:11:40 host kubelet[1]: x`, fail: true},
	} {
		got, year, ok := lineTime([]byte(tc.line))
		if ok == tc.fail {
			t.Errorf("%q: ok %v", tc.line, ok)
			continue
		}
		if tc.fail {
			continue
		}
		if s := got.Format(time.RFC3339Nano); s != tc.want || year != tc.year {
			t.Errorf("%q: %s (year %v), want %s (year %v)", tc.line, s, year, tc.want, tc.year)
		}
	}
}

// TestCloudInitBoot: the boot time from cloud-init's stage and final lines, as AL2, AL2023 and
// other cloud-init versions write them (sources in cloudinit_test.go), in either log.
func TestCloudInitBoot(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // RFC 3339, "" for no boot
	}{
		{line: "Cloud-init v. 19.3-44.amzn2 running 'modules:final' at Thu, 07 Oct 2021 13:28:41 +0000. Up 51.58 seconds.", want: "2021-10-07T13:27:49.42Z"},
		{line: "Oct 07 13:28:42 ip-10-1-6-110.eu-central-1.compute.internal cloud-init[2512]: Cloud-init v. 19.3-44.amzn2 running 'modules:final' at Thu, 07 Oct 2021 13:28:41 +0000. Up 51.58 seconds.", want: "2021-10-07T13:27:49.42Z"},
		{line: "Cloud-init v. 19.3-43.amzn2 finished at Thu, 10 Jun 2021 09:43:39 +0000. Datasource DataSourceEc2.  Up 11.33 seconds", want: "2021-06-10T09:43:27.67Z"},
		{line: "Cloud-init v. 0.7.5 finished at Thu, 05 Feb 2015 09:59:56 +0000. Datasource DataSourceOpenStack [net,ver=2]. Up 22.14 seconds", want: "2015-02-05T09:59:33.86Z"},
		{line: "2024-03-04 09:11:10,001 - util.py[DEBUG]: Cloud-init v. 22.2.2 running 'init-local' at Mon, 04 Mar 2024 09:11:10 +0000. Up 5.12 seconds.", want: "2024-03-04T09:11:04.88Z"},
		{line: "Cloud-init v. 22.2.2 running 'init' at Mon, 04 Mar 2024 11:11:10 +0200. Up 8.00 seconds.", want: "2024-03-04T09:11:02Z"},
		{line: "Cloud-init v. 22.2.2 finished at Wed, 10 Sep 2025 12:53:14 +0000. Datasource DataSourceEc2."},
		{line: "Cloud-init v. 19.3-46.amzn2 running 'modules:final'"},
		{line: "Cloud-init v. 22.2.2 running 'init' at Mon, 4 Mar 2024 09:11:10 +0000. Up 8.00 seconds."},
		{line: "Cloud-init v. 22.2.2 running 'init' at Mon, 04 Foo 2024 09:11:10 +0000. Up 8.00 seconds."},
	} {
		var b bootFacts
		b.noteCloudInit("var_log/cloud-init.log", 1, []byte(tc.line))
		got := ""
		if at, _, ok := b.boot(); ok {
			got = at.Format(time.RFC3339Nano)
		}
		if got != tc.want {
			t.Errorf("%q: boot %q, want %q", tc.line, got, tc.want)
		}
	}
}
