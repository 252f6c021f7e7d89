package bundle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// Boot log lines as nodes write them. The layouts are quoted from real logs, the messages from
// the programs' source:
//   - AL2's cloud-init (19.3-NN.amzn2) logs "MON DD HH:MM:SS cloud-init[PID]: FILE[LEVEL]: MSG" to
//     cloud-init.log, e.g. "util.py[WARNING]: Failed running /var/lib/cloud/instance/scripts/part-001
//     [1]" (awslabs/amazon-eks-ami issue 49, aws/karpenter-provider-aws issue 5494, with [2]);
//     its stage line "Cloud-init v. 19.3-44.amzn2 running 'modules:final' at Thu, 07 Oct 2021
//     13:28:41 +0000. Up 51.58 seconds." (terraform-aws-modules/terraform-aws-eks issue 1628);
//   - newer cloud-init (AL2023's 22.2.2) logs "YYYY-MM-DD HH:MM:SS,mmm - FILE[LEVEL]: MSG", a failed
//     script as subp.py's "Unexpected error while running command." with "Command: [...]" and
//     "Exit code: N" on the lines after, then cc_scripts_user.py's "Failed to run module
//     scripts-user (scripts in /var/lib/cloud/instance/scripts)" (canonical/cloud-init issue
//     4082, exit code 32), and RuntimeError "Runparts: %s failures (%s) in %s attempted commands"
//     (cloudinit/subp.py at 22.2.2);
//   - AL2023's bootstrap.sh stub "ERROR: bootstrap.sh has been removed from AL2023-based EKS
//     AMIs." and "Cloud-init v. 22.2.2 finished at Wed, 10 Sep 2025 12:53:14 +0000. Datasource
//     DataSourceEc2." (awslabs/amazon-eks-ami issue 2426; the stub is
//     templates/al2023/runtime/rootfs/etc/eks/bootstrap.sh);
//   - nodeadm's journal "MON DD HH:MM:SS localhost nodeadm[PID]: info init/init.go:171 Fetching
//     instance details.." (awslabs/amazon-eks-ami issue 2632) and systemd's
//     "nodeadm-config.service: Failed to locate executable /usr/bin/nodeadm: Permission denied",
//     "Main process exited, code=exited, status=203/EXEC", "Failed with result 'exit-code'."
//     (issue 2123); nodeadm's fatal line is log.Fatal("Command failed", zap.Error(err)) at
//     nodeadm/internal/cli/main.go:35 through zap's console encoder (cli/logger.go);
//   - AL2's bootstrap.sh: log "[eks-bootstrap] ERROR: ..." and its ERR trap "Exited with error on
//     line N" (templates/al2/runtime/bootstrap.sh before its removal in amazon-eks-ami b2289030);
//   - bash: "/var/lib/cloud/instance/scripts/part-001: line 7: /etc/eks/bootstrap.sh: No such
//     file or directory" (terraform-aws-modules/terraform-aws-eks issue 1179);
//   - AL2023 AMIs from before the stub (amazon-eks-ami PR 2056, 2024-11-15) have no
//     /etc/eks/bootstrap.sh: awslabs/amazon-eks-ami issue 1885 (amazon-eks-node-al2023-x86_64-
//     standard-1.30-v20240703) with its `uname -a` "Linux ip-100-64-119-30.ap-southeast-1.compute.
//     internal 6.1.94-99.176.amzn2023.x86_64 #1 SMP PREEMPT_DYNAMIC Tue Jun 18 14:57:56 UTC 2024
//     x86_64 x86_64 x86_64 GNU/Linux", issue 1863 (the same on 6.1.92-99.174.amzn2023), and AL2's
//     kernel "5.10.216-204.855.amzn2.x86_64" (issue 1833);
//   - nodeadm's JSON lines of those AMIs (zap.NewProduction() in nodeadm/internal/cli/logger.go
//     until amazon-eks-ami 4c653a29, PR 2552): the journal's "Feb 05 01:55:51
//     ip-172-31-28-111.ec2.internal nodeadm[7702]: {"level":"info","ts":1738720551.576076,
//     "caller":"init/init.go:52","msg":"Checking user is root.."}" (issue 2123) and the fatal entry
//     {"level":"fatal","ts":1709500289.8128433,"caller":"nodeadm/main.go:36","msg":"Command
//     failed","error":"yaml: line 4: could not find expected ':'","stacktrace":"main.main\n\t..."}
//     (issue 1701, log.Fatal("Command failed", zap.Error(err)) in cmd/nodeadm/main.go at 6c054415).
const (
	al2Stage    = "Cloud-init v. 19.3-46.amzn2 running 'modules:final' at Mon, 04 Mar 2024 09:11:20 +0000. Up 18.30 seconds.\n"
	al2Finished = "Cloud-init v. 19.3-46.amzn2 finished at Mon, 04 Mar 2024 09:11:45 +0000. Datasource DataSourceEc2.  Up 43.41 seconds\n"
	al2Failed   = "Mar 04 09:11:44 cloud-init[2692]: util.py[WARNING]: Failed running /var/lib/cloud/instance/scripts/part-001 [1]\n" +
		"Mar 04 09:11:44 cloud-init[2692]: cc_scripts_user.py[WARNING]: Failed to run module scripts-user (scripts in /var/lib/cloud/instance/scripts)\n" +
		"Mar 04 09:11:44 cloud-init[2692]: util.py[WARNING]: Running module scripts-user (<module 'cloudinit.config.cc_scripts_user' from '/usr/lib/python2.7/site-packages/cloudinit/config/cc_scripts_user.pyc'>) failed\n"
	al2CloudInitLog = "Mar 04 09:11:21 cloud-init[2692]: util.py[DEBUG]: Running command ['/var/lib/cloud/instance/scripts/part-001'] with allowed return codes [0] (shell=True, capture=False)\n" +
		al2Failed
	al2023Stage    = "Cloud-init v. 22.2.2 running 'modules:final' at Mon, 04 Mar 2024 09:11:20 +0000. Up 12.05 seconds.\n"
	al2023Finished = "Cloud-init v. 22.2.2 finished at Mon, 04 Mar 2024 09:11:22 +0000. Datasource DataSourceEc2.  Up 14.21 seconds\n"
	al2023Removed  = "\n!!!!!!!!!!\n!!!!!!!!!! ERROR: bootstrap.sh has been removed from AL2023-based EKS AMIs.\n!!!!!!!!!!\n!!!!!!!!!! EKS nodes are now initialized by nodeadm.\n!!!!!!!!!!\n"
	al2023Failed   = "2024-03-04 09:11:21,604 - subp.py[DEBUG]: Running command ['/var/lib/cloud/instance/scripts/part-001'] with allowed return codes [0] (shell=False, capture=False)\n" +
		"2024-03-04 09:11:21,611 - subp.py[DEBUG]: Unexpected error while running command.\n" +
		"Command: ['/var/lib/cloud/instance/scripts/part-001']\nExit code: 1\nReason: -\nStdout: -\nStderr: -\n" +
		"2024-03-04 09:11:21,611 - cc_scripts_user.py[WARNING]: Failed to run module scripts-user (scripts in /var/lib/cloud/instance/scripts)\n" +
		"2024-03-04 09:11:21,612 - util.py[WARNING]: Running module scripts-user (<module 'cloudinit.config.cc_scripts_user' from '/usr/lib/python3.9/site-packages/cloudinit/config/cc_scripts_user.py'>) failed\n" +
		"RuntimeError: Runparts: 1 failures (part-001) in 1 attempted commands\n"
	nodeadmConfigFailed = "Mar 04 09:11:05 localhost systemd[1]: Starting nodeadm-config.service - EKS Nodeadm Config...\n" +
		"Mar 04 09:11:05 localhost nodeadm[1523]: info init/init.go:58 Checking user is root..\n" +
		"Mar 04 09:11:05 localhost nodeadm[1523]: info init/init.go:70 Loading configuration.. {\"configSource\": [\"imds://user-data\"], \"configCache\": \"/run/eks/nodeadm/config.json\"}\n" +
		"Mar 04 09:11:06 localhost nodeadm[1523]: fatal cli/main.go:35 Command failed {\"error\": \"Apiserver endpoint is missing in cluster configuration\"}\n" +
		"Mar 04 09:11:06 localhost systemd[1]: nodeadm-config.service: Main process exited, code=exited, status=1/FAILURE\n" +
		"Mar 04 09:11:06 localhost systemd[1]: nodeadm-config.service: Failed with result 'exit-code'.\n" +
		"Mar 04 09:11:06 localhost systemd[1]: Failed to start nodeadm-config.service - EKS Nodeadm Config.\n"
	al2023Uname = "Linux ip-100-64-119-30.ap-southeast-1.compute.internal 6.1.94-99.176.amzn2023.x86_64 #1 SMP PREEMPT_DYNAMIC Tue Jun 18 14:57:56 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux\n"
	al2Uname    = "Linux ip-10-0-1-20.eu-north-1.compute.internal 5.10.216-204.855.amzn2.x86_64 #1 SMP Sat May 4 16:53:27 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux\n"
	// al2023NoBootstrap is AL2 user data on an AL2023 AMI without the stub: bash finds no
	// bootstrap.sh, the script exits 127.
	al2023NoBootstrap = "+ /etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=58'\n" +
		"/var/lib/cloud/instance/scripts/part-001: line 3: /etc/eks/bootstrap.sh: No such file or directory\n"
	nodeadmJSONFatal = "Feb 05 01:55:46 ip-172-31-28-111.ec2.internal systemd[1]: Starting nodeadm-config.service - EKS Nodeadm Config...\n" +
		"Feb 05 01:55:51 ip-172-31-28-111.ec2.internal nodeadm[7702]: {\"level\":\"info\",\"ts\":1738720551.576076,\"caller\":\"init/init.go:52\",\"msg\":\"Checking user is root..\"}\n" +
		"Feb 05 01:55:51 ip-172-31-28-111.ec2.internal nodeadm[7702]: {\"level\":\"info\",\"ts\":1738720551.577003,\"caller\":\"init/init.go:60\",\"msg\":\"Loading configuration..\",\"configSource\":\"imds://user-data\"}\n" +
		"Feb 05 01:55:51 ip-172-31-28-111.ec2.internal nodeadm[7702]: {\"level\":\"fatal\",\"ts\":1738720551.5928433,\"caller\":\"nodeadm/main.go:36\",\"msg\":\"Command failed\",\"error\":\"yaml: line 4: could not find expected ':'\",\"stacktrace\":\"main.main\\n\\t/workdir/cmd/nodeadm/main.go:36\\nruntime.main\\n\\t/root/sdk/go1.21.7/src/runtime/proc.go:267\"}\n" +
		"Feb 05 01:55:51 ip-172-31-28-111.ec2.internal systemd[1]: nodeadm-config.service: Main process exited, code=exited, status=1/FAILURE\n" +
		"Feb 05 01:55:51 ip-172-31-28-111.ec2.internal systemd[1]: nodeadm-config.service: Failed with result 'exit-code'.\n"
	nodeadmRunSkipped = "Mar 04 09:11:23 localhost systemd[1]: Dependency failed for nodeadm-run.service - EKS Nodeadm Run.\n"
	nodeadmConfigOK   = "Mar 04 09:11:05 localhost systemd[1]: Starting nodeadm-config.service - EKS Nodeadm Config...\n" +
		"Mar 04 09:11:05 localhost nodeadm[1523]: info init/init.go:58 Checking user is root..\n" +
		"Mar 04 09:11:06 localhost nodeadm[1523]: info init/init.go:171 Fetching instance details..\n" +
		"Mar 04 09:11:07 localhost nodeadm[1523]: info init/init.go:120 done! {\"duration\": \"1.9s\"}\n" +
		"Mar 04 09:11:07 localhost systemd[1]: Finished nodeadm-config.service - EKS Nodeadm Config.\n"
)

// bothInputs analyses files as the collector's tarball and as its unpacked directory.
func bothInputs(t *testing.T, files map[string]string) map[string]*findings.Report {
	t.Helper()
	archive := analyzeFiles(t, files, Options{})
	dir := t.TempDir()
	writeTree(t, dir, files)
	tree, err := AnalyzeFile(dir, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*findings.Report{"tarball": archive, "directory": tree}
}

// bootCodes are a report's findings of the boot logs and NK622.
func bootCodes(rep *findings.Report) string {
	var out []string
	for _, c := range findingstest.ReportCodes(rep) {
		for _, p := range []string{"NK622", "NK636", "NK637", "NK638", "NK639"} {
			if strings.HasPrefix(c, p+":") {
				out = append(out, c)
			}
		}
	}
	return strings.Join(out, " ")
}

// TestUserDataErrors: each format of the user data's own errors, as AL2's cloud-init, AL2023's
// cloud-init and nodeadm write them, gives its finding naming what failed, from the tarball and
// from the directory alike; a clean boot gives none.
func TestUserDataErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string              // bootCodes
		says  map[string][]string // code: what its message says
	}{
		{
			name: "AL2: the script fails, in both cloud-init logs",
			files: map[string]string{
				pCloudInitOut: al2Stage + "+ /etc/eks/bootstrap.sh prod --b64-cluster-ca xxx\n" +
					"2024-03-04T09:11:44+0000 [eks-bootstrap] ERROR: Invalid --ip-family. Only ipv4 or ipv6 are allowed\n" + al2Failed + al2Finished,
				pCloudInitLog: al2CloudInitLog,
			},
			want: "NK636:error",
			says: map[string][]string{"NK636": {"part-001 exited with status 1", "cloud-init module scripts-user", "bootstrap.sh: ERROR: Invalid --ip-family", "5 lines say"}},
		},
		{
			name: "AL2: a command not found, status 127, bootstrap.sh's ERR trap",
			files: map[string]string{
				pCloudInitOut: al2Stage + "+ jq -r .cluster /etc/eks/config.json\n" +
					"/var/lib/cloud/instance/scripts/part-001: line 4: jq: command not found\n" +
					"/var/lib/cloud/instance/scripts/part-001: line 7: /etc/eks/bootstrap.sh: No such file or directory\n" +
					"Exited with error on line 495\n" +
					strings.Replace(al2Failed, "[1]", "[127]", 1) + al2Finished,
			},
			want: "NK636:error NK637:warning",
			says: map[string][]string{
				"NK636": {"part-001 exited with status 127 (a command was not found)", "bootstrap.sh exited with an error at its line 495"},
				"NK637": {"2 commands or files", "jq (part-001 line 4)", "/etc/eks/bootstrap.sh (part-001 line 7)"},
			},
		},
		{
			// A #!/bin/sh script run by dash: "SCRIPT: N: CMD: not found" (dash's own wording).
			name: "a sh script under dash: a command not found",
			files: map[string]string{
				pCloudInitOut: al2Stage + "/var/lib/cloud/instance/scripts/part-001: 4: jq: not found\n" +
					strings.Replace(al2Failed, "[1]", "[127]", 1) + al2Finished,
			},
			want: "NK636:error NK637:warning",
			says: map[string][]string{"NK637": {"1 command or file", "jq (part-001 line 4)"}},
		},
		{
			name: "AL2023: AL2 user data calls bootstrap.sh, cloud-init 22.2.2's log",
			files: map[string]string{
				pCloudInitOut: al2023Stage + "+ /etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=58'\n" + al2023Removed + al2023Finished,
				pCloudInitLog: al2023Failed,
			},
			want: "NK636:error NK639:error",
			says: map[string][]string{
				"NK636": {"part-001 exited with status 1", "cloud-init module scripts-user", "which AL2023 replaces with a stub that exits 1 (NK639)"},
				"NK639": {"1 line says bootstrap.sh has been removed", "written for AL2 and the node runs AL2023"},
			},
		},
		{
			name: "AL2023: nodeadm-config fails, nodeadm-run does not run",
			files: map[string]string{
				pCloudInitOut:                   al2023Stage + al2023Finished,
				"nodeadm/nodeadm-config.log":    nodeadmConfigFailed,
				"nodeadm/nodeadm-run.log":       nodeadmRunSkipped,
				"nodeadm/nodeadm-boot-hook.log": "-- No entries --\n",
			},
			want: "NK638:error",
			says: map[string][]string{"NK638": {
				"Command failed: Apiserver endpoint is missing in cluster configuration",
				"nodeadm-config.service: Failed with result 'exit-code'.",
				"nodeadm-run.service did not run: a unit it needs failed",
			}},
		},
		{
			name: "AL2023 before the stub: no bootstrap.sh at all, the kernel says AL2023",
			files: map[string]string{
				pCloudInitOut: al2023Stage + al2023NoBootstrap + al2023Finished,
				pCloudInitLog: strings.NewReplacer("Exit code: 1", "Exit code: 127").Replace(al2023Failed),
				pUname:        al2023Uname,
			},
			want: "NK636:error NK637:warning NK639:error",
			says: map[string][]string{
				"NK636": {"part-001 exited with status 127", "which this AL2023 AMI does not have (NK639)"},
				"NK637": {"/etc/eks/bootstrap.sh (part-001 line 3)"},
				"NK639": {"calls /etc/eks/bootstrap.sh (part-001 line 3)", "kernel 6.1.94-99.176.amzn2023.x86_64 (kernel/uname.txt)", "cloud-init 22.2.2", "written for AL2"},
			},
		},
		{
			name: "AL2023 before the stub: nodeadm's units say AL2023, its JSON fatal line its reason",
			files: map[string]string{
				pCloudInitOut:                   al2023Stage + al2023NoBootstrap + al2023Finished,
				"nodeadm/nodeadm-config.log":    nodeadmJSONFatal,
				"nodeadm/nodeadm-run.log":       nodeadmRunSkipped,
				"nodeadm/nodeadm-boot-hook.log": "-- No entries --\n",
			},
			want: "NK637:warning NK638:error NK639:error",
			says: map[string][]string{
				"NK638": {"Command failed: yaml: line 4: could not find expected ':'", "nodeadm-config.service: Failed with result 'exit-code'."},
				"NK639": {"nodeadm's units logged (nodeadm/nodeadm-config.log)", "cloud-init 22.2.2 (var_log/cloud-init-output.log)"},
			},
		},
		{
			// nodeadm's JSON lines (AL2023 AMIs of 2024 to late 2025): the reason is read from the
			// entry's msg and error, as from the console format's.
			name: "AL2023: nodeadm-config fails, its JSON fatal line gives the reason",
			files: map[string]string{
				"nodeadm/nodeadm-config.log": nodeadmJSONFatal,
				"nodeadm/nodeadm-run.log":    nodeadmRunSkipped,
			},
			want: "NK638:error",
			says: map[string][]string{"NK638": {
				"4 nodeadm errors: Command failed: yaml: line 4: could not find expected ':'; nodeadm-config.service: Main process exited",
			}},
		},
		{
			// The same lines on AL2 (its kernel, cloud-init 19.3, nodeadm's journals empty as the
			// collector writes them on every systemd host): a missing bootstrap.sh, not AL2023.
			name: "AL2: bootstrap.sh not found is not NK639",
			files: map[string]string{
				pCloudInitOut:                al2Stage + al2023NoBootstrap + strings.Replace(al2Failed, "[1]", "[127]", 1) + al2Finished,
				pUname:                       al2Uname,
				"nodeadm/nodeadm-config.log": "-- No entries --\n",
			},
			want: "NK636:error NK637:warning",
		},
		{
			// cloud-init 22 alone (Ubuntu 22.04 has it too) does not say AL2023.
			name: "cloud-init 22 alone is not AL2023",
			files: map[string]string{
				pCloudInitOut: al2023Stage + al2023NoBootstrap + al2023Finished,
			},
			want: "NK637:warning",
		},
		{
			name: "AL2023: nodeadm cannot run at all",
			files: map[string]string{
				"nodeadm/nodeadm-config.log": "Feb 02 03:47:49 localhost (nodeadm)[1748]: nodeadm-config.service: Failed to locate executable /usr/bin/nodeadm: Permission denied\n" +
					"Feb 02 03:47:49 localhost systemd[1]: nodeadm-config.service: Main process exited, code=exited, status=203/EXEC\n",
			},
			want: "NK638:error",
			says: map[string][]string{"NK638": {"nodeadm-config.service: Failed to locate executable /usr/bin/nodeadm: Permission denied", "status=203/EXEC"}},
		},
		{
			name: "nodeadm run by the user data itself",
			files: map[string]string{
				pCloudInitOut: al2023Stage + "+ nodeadm init --config-source file:///etc/eks/nodeconfig.yaml\n" +
					"info init/init.go:58 Checking user is root..\n" +
					"fatal cli/main.go:35 Command failed {\"error\": \"config provider at index 0 failed: open /etc/eks/nodeconfig.yaml: no such file or directory\"}\n",
			},
			want: "NK638:error",
			says: map[string][]string{"NK638": {"1 nodeadm error:", "Command failed: config provider at index 0 failed: open /etc/eks/nodeconfig.yaml"}},
		},
		{
			name: "clean AL2 boot",
			files: map[string]string{
				pCloudInitOut: al2Stage + "+ /etc/eks/bootstrap.sh prod --b64-cluster-ca xxx\n2024-03-04T09:11:21+0000 [eks-bootstrap] INFO: starting...\n" +
					"+ echo 'jq: command not found would stop us'\njq: command not found would stop us\n+ echo Failed running tests: none\n" + al2Finished,
				pCloudInitLog: "Mar 04 09:11:21 cloud-init[2692]: util.py[DEBUG]: Running command ['/var/lib/cloud/instance/scripts/part-001'] with allowed return codes [0] (shell=True, capture=False)\n" +
					"Mar 04 09:11:45 cloud-init[2692]: handlers.py[DEBUG]: finish: modules-final/config-scripts-user: SUCCESS: config-scripts-user ran successfully\n",
			},
		},
		{
			name: "clean AL2023 boot",
			files: map[string]string{
				pCloudInitOut:                al2023Stage + al2023Finished,
				pCloudInitLog:                "2024-03-04 09:11:21,604 - subp.py[DEBUG]: Running command ['/var/lib/cloud/instance/scripts/part-001'] with allowed return codes [0] (shell=False, capture=False)\nCommand: ['/var/lib/cloud/instance/scripts/part-001'] is a line a script may print\nExit code: 0\n",
				"nodeadm/nodeadm-config.log": nodeadmConfigOK,
				"nodeadm/nodeadm-run.log":    strings.ReplaceAll(nodeadmConfigOK, "nodeadm-config", "nodeadm-run"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for input, rep := range bothInputs(t, tc.files) {
				if got := bootCodes(rep); got != tc.want {
					t.Fatalf("%s: boot findings %q, want %q (all: %v)", input, got, tc.want, findingstest.ReportCodes(rep))
				}
				for code, says := range tc.says {
					f := findCode(t, rep, code)
					textcheck.Contains(t, input+" "+code, f.Message, says, nil)
					if len(f.Evidence) == 0 {
						t.Errorf("%s %s: no evidence", input, code)
					}
				}
			}
		})
	}
}

// TestBootLogsBounded: a hostile boot log (a long line, terminal escapes, thousands of distinct
// commands not found) gives findings of bounded size whose text reaches the terminal escaped.
func TestBootLogsBounded(t *testing.T) {
	var out strings.Builder
	out.WriteString("/var/lib/cloud/instance/scripts/part-001: line 1: \x1b]0;pwned\x07" + strings.Repeat("x", 200) + ": command not found\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&out, "/var/lib/cloud/instance/scripts/part-001: line %d: tool%d: command not found\n", i+2, i)
	}
	out.WriteString("util.py[WARNING]: Failed running /var/lib/cloud/instance/scripts/" + strings.Repeat("\u202e", 100) + strings.Repeat("p", 1000) + " [1] " + strings.Repeat("\x9b", 3*maxLine) + "\n")
	files := map[string]string{pCloudInitOut: out.String(), "nodeadm/nodeadm-run.log": "fatal cli/main.go:35 Command failed {\"error\": \"" + strings.Repeat("\x1b[2J", 20000) + "\"}\n"}
	for input, rep := range bothInputs(t, files) {
		nf := findCode(t, rep, "NK637")
		textcheck.Contains(t, input+" NK637", nf.Message, []string{"5001 commands or files", "tool0 (part-001 line 2)", "tool2 (part-001 line 4)", "and more"}, []string{"tool4 "})
		for _, code := range []string{"NK637", "NK638"} {
			f := findCode(t, rep, code)
			if len(f.Message) > 2000 {
				t.Errorf("%s %s: message of %d bytes", input, code, len(f.Message))
			}
			for _, e := range f.Evidence {
				if len(e) > 2*evidenceWidth+1 {
					t.Errorf("%s %s: evidence of %d bytes", input, code, len(e))
				}
			}
		}
		// The long line is cut at maxLine; the script's name is cut in the message.
		if f := findCode(t, rep, "NK636"); len(f.Message) > 400 || !strings.Contains(f.Message, "…") {
			t.Errorf("%s NK636: %q", input, f.Message)
		}
		text := findingstest.SafeText(t, input+" text", rep, findings.PrintOptions{Catalog: catalog, MaxPerRule: -1})
		textcheck.Contains(t, input+" text", text, []string{`\x1b]0;pwned\x07`}, nil)
	}
}

// TestFirstItemsOrder: the items a finding lists are the first by file and line, with the exit
// status met first, whatever order the lines come in.
func TestFirstItemsOrder(t *testing.T) {
	type add struct {
		file         string
		n            int
		text, detail string
	}
	adds := []add{
		{"b.log", 1, "part-001", "2"},
		{"a.log", 9, "part-001", ""},
		{"a.log", 10, "part-001", "1"},
		{"a.log", 3, "part-002", ""},
		{"c.log", 1, "x1", ""}, {"c.log", 2, "x2", ""}, {"c.log", 3, "x3", ""}, {"c.log", 4, "x4", ""},
	}
	const want = "part-002; part-001 exited with status 1; x1; x2; x3; and more"
	perms := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}, {2, 0, 5, 1, 7, 3, 6, 4}}
	for _, p := range perms {
		var f firstItems
		for _, i := range p {
			a := adds[i]
			f.add(linePos{a.file, a.n}, a.text, a.detail)
		}
		if got := f.list(scriptStatus); got != want {
			t.Errorf("order %v: %q, want %q", p, got, want)
		}
	}
}
