package bundle

// The user data's own errors, as cloud-init and nodeadm log them while the node boots
// (issue 23 part 2): the script cloud-init ran failed (NK636), a command in it was not found
// (NK637), nodeadm failed (NK638), or AL2 user data called bootstrap.sh on AL2023 (NK639).
//
// Where they are: eks-log-collector.sh copies /var/log/cloud-init.log and
// /var/log/cloud-init-output.log (and user-data.log, which scripts often tee to) into var_log/,
// and writes the journals of nodeadm's units to nodeadm/nodeadm-{config,run,boot-hook}.log
// (log-collector-script/linux/eks-log-collector.sh, COMMON_LOGS and get_nodeadm_info, in
// awslabs/amazon-eks-ami).
//
// The formats, from the programs that write them:
//   - cloud-init's runparts: "Failed running %s [%s]" with the script and its exit status
//     (cloudinit/util.py at 19.3, the cloud-init of AL2), "Runparts: %s failures (%s) in %s
//     attempted commands" and the ProcessExecutionError text ("Command: [...]" then
//     "Exit code: N" on the next line) in cloud-init.log (cloudinit/subp.py at 22.2.2, AL2023's);
//     cc_scripts_user.py: "Failed to run module %s (%s in %s)" in both;
//   - bash: "SCRIPT: line N: CMD: command not found" (dash: "SCRIPT: N: CMD: not found");
//   - AL2's bootstrap.sh: its ERR trap's "Exited with error on line N" and its log's
//     "[eks-bootstrap] ERROR: ..." (templates/al2/runtime/bootstrap.sh before its removal);
//   - AL2023's /etc/eks/bootstrap.sh stub: "ERROR: bootstrap.sh has been removed from
//     AL2023-based EKS AMIs." then exit 1 (templates/al2023/runtime/rootfs/etc/eks/bootstrap.sh);
//   - nodeadm: zap's console encoder without time, "LEVEL CALLER MSG {FIELDS}", a failed command
//     ending in "fatal cli/main.go:NN Command failed {"error": "..."}" (nodeadm/internal/cli/
//     logger.go and main.go, since amazon-eks-ami 4c653a29, PR 2552, December 2025); before
//     it zap.NewProduction()'s JSON encoder, one object per line with the keys level, ts, caller,
//     msg, the fields, then stacktrace: {"level":"fatal","ts":1709500289.81,"caller":
//     "nodeadm/main.go:36","msg":"Command failed","error":"...","stacktrace":"..."} (issue 1701),
//     in the journal after "nodeadm[PID]: " (issue 2123); systemd's "nodeadm-config.service: Failed with result '...'" in
//     the unit's journal.

import (
	"bytes"
	"encoding/json"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Member paths of the boot logs read only for these checks (cloud-init-output.log and
// user-data.log are read with the bootstrap checks, gather.go).
const (
	pCloudInitLog = "var_log/cloud-init.log"
	pNodeadmDir   = "nodeadm/"
)

// nodeadmLogs are the journals of nodeadm's units as the collector names them.
var nodeadmLogs = []string{pNodeadmDir + "nodeadm-config.log", pNodeadmDir + "nodeadm-run.log", pNodeadmDir + "nodeadm-boot-hook.log"}

func isBootLog(name string) bool {
	return name == pCloudInitLog || slices.Contains(nodeadmLogs, name)
}

var (
	reScriptFailed = regexp.MustCompile(`Failed running (/\S+) \[(-?\d+)\]`)
	reRunparts     = regexp.MustCompile(`Runparts: \d+ failures(?: \(([^)]{1,512})\))? in \d+ attempted commands`)
	reModuleFailed = regexp.MustCompile(`Failed to run module (scripts-[\w-]+) \(`)
	reExecCommand  = regexp.MustCompile(`^Command: \['(/[^']+/scripts/[^']+)'`)
	reExecExit     = regexp.MustCompile(`^Exit code: (-?\d+)\s*$`)
	reBootstrapEnd = regexp.MustCompile(`Exited with error on line (\d+)\s*$`)
	reBootstrapErr = regexp.MustCompile(`\[eks-bootstrap\] (ERROR: .+)$`)
	// reNotFound: bash's "SCRIPT: line N: CMD: command not found" (or "No such file or
	// directory" for a path), dash's "SCRIPT: N: CMD: not found" for cloud-init's scripts.
	reNotFound    = regexp.MustCompile(`(\S+): line (\d+): (.{1,256}?): (?:command not found|No such file or directory)\s*$|(\S+/scripts/\S+): (\d+): (.{1,256}?): not found\s*$`)
	reScriptError = regexp.MustCompile(`Failed running /\S+ \[-?\d+\]|Failed to run module scripts-|Runparts: \d+ failures|Exited with error on line \d+\s*$|\[eks-bootstrap\] ERROR: `)
	reNodeadmLog  = regexp.MustCompile(`(?:^|nodeadm\[\d+\]: )(?:error|fatal|dpanic|panic) [\w./-]+\.go:\d+ (.+)$`)
	// reNodeadmJSON: zap's JSON encoder, nodeadm's format before its console one (see the top).
	reNodeadmJSON = regexp.MustCompile(`(?:^|nodeadm\[\d+\]: )(\{"level":"(?:error|fatal|dpanic|panic)",.*)$`)
	reNodeadmUnit = regexp.MustCompile(`(nodeadm-[\w-]+\.service): (Failed .+|Main process exited, .+)$|Dependency failed for (nodeadm-[\w-]+\.service)`)
	reNodeadmAny  = regexp.MustCompile(reNodeadmLog.String() + "|" + reNodeadmJSON.String() + "|" + reNodeadmUnit.String())
)

// maxBootItems bounds what each boot log finding lists (failed scripts, commands not found,
// nodeadm errors): the first met by file name and line number are kept.
const maxBootItems = 5

// cloudInitFacts is what the boot logs say about the user data's run.
type cloudInitFacts struct {
	// scan runs NK636-NK639 (each counting its lines and keeping its evidence); its files are
	// the boot logs read here alone (cloud-init.log, nodeadm's journals).
	scan                               *scanner
	script, notFound, nodeadm, removed *pattern
	// What the lines name, for the messages.
	scripts, commands, nodeadmErrs firstItems
	// missingBootstrap is the first line saying /etc/eks/bootstrap.sh is not there (bash's "No
	// such file or directory" or "command not found"): AL2 user data on an AL2023 AMI from
	// before the stub, when the bundle shows AL2023 (nodeos.go).
	missingBootstrap       linePos
	missingBootstrapLine   string
	missingBootstrapCalled string // "part-001 line 7"
	// exec is cloud-init.log's "Command: [SCRIPT]" line waiting for its "Exit code: N".
	exec struct {
		at     linePos
		script string
	}
}

func (c *cloudInitFacts) init(lines *lineReader) {
	c.script = &pattern{rule: RuleScriptFailed, what: findings.Noun{One: "line says a user data script failed", Many: "lines say a user data script failed"},
		any: bs("Failed running", "Failed to run module scripts-", "Runparts: ", "Exited with error on line", "[eks-bootstrap] ERROR"), re: reScriptError,
		onMatchAt: func(file string, n int, line []byte) {
			at := linePos{file, n}
			if m := reScriptFailed.FindSubmatch(line); m != nil {
				c.scripts.add(at, path.Base(string(m[1])), string(m[2]))
			}
			if m := reRunparts.FindSubmatch(line); m != nil {
				for _, s := range strings.Split(string(m[1]), ",") {
					if s = strings.TrimSpace(s); s != "" {
						c.scripts.add(at, s, "")
					}
				}
			}
			if m := reModuleFailed.FindSubmatch(line); m != nil {
				c.scripts.add(at, "cloud-init module "+string(m[1]), "")
			}
			if m := reBootstrapEnd.FindSubmatch(line); m != nil {
				c.scripts.add(at, "bootstrap.sh exited with an error at its line "+string(m[1]), "")
			}
			if m := reBootstrapErr.FindSubmatch(line); m != nil {
				c.scripts.add(at, "bootstrap.sh: "+string(m[1]), "")
			}
		}}
	c.notFound = &pattern{rule: RuleCommandNotFound, what: findings.Noun{One: "command or file of the user data not found", Many: "commands or files of the user data not found"},
		any: bs("not found", "No such file or directory"), re: reNotFound,
		onMatchAt: func(file string, n int, line []byte) {
			m := reNotFound.FindSubmatch(line)
			if m[1] == nil {
				m = m[3:]
			}
			at := linePos{file, n}
			c.commands.add(at, string(m[3]), path.Base(string(m[1]))+" line "+string(m[2]))
			if path.Base(string(m[3])) == "bootstrap.sh" && (c.missingBootstrapLine == "" || at.before(c.missingBootstrap)) {
				c.missingBootstrap, c.missingBootstrapLine = at, evidence(file, n, line)
				c.missingBootstrapCalled = textsafe.ClipRawBytes(path.Base(string(m[1])), 200) + " line " + string(m[2])
			}
		}}
	c.nodeadm = &pattern{rule: RuleNodeadmFailed, what: findings.Noun{One: "nodeadm error", Many: "nodeadm errors"},
		any: bs("error ", "fatal ", "panic ", "nodeadm-", `{"level":"`), re: reNodeadmAny,
		onMatchAt: func(file string, n int, line []byte) {
			at := linePos{file, n}
			if m := reNodeadmLog.FindSubmatch(line); m != nil {
				c.nodeadmErrs.add(at, nodeadmMessage(m[1]), "")
			} else if m := reNodeadmJSON.FindSubmatch(line); m != nil {
				c.nodeadmErrs.add(at, nodeadmJSONMessage(m[1]), "")
			} else if m := reNodeadmUnit.FindSubmatch(line); m != nil {
				if len(m[1]) > 0 {
					c.nodeadmErrs.add(at, string(m[1])+": "+string(m[2]), "")
				} else {
					c.nodeadmErrs.add(at, string(m[3])+" did not run: a unit it needs failed", "")
				}
			}
		}}
	c.removed = &pattern{rule: RuleBootstrapRemoved, what: findings.Noun{One: "line says bootstrap.sh has been removed from AL2023", Many: "lines say bootstrap.sh has been removed from AL2023"},
		all: bs("bootstrap.sh has been removed from AL2023")}
	c.scan = newScanner(c.script, c.notFound, c.nodeadm, c.removed)
	c.scan.lines = lines
}

// nodeadmMessage turns zap's "MSG {"error": "..."}" into "MSG: ...", keeping the text as
// written when the fields are not JSON (a journal cut the line, say).
func nodeadmMessage(rest []byte) string {
	msg, fields, ok := bytes.Cut(rest, []byte(" {"))
	if !ok {
		return string(rest)
	}
	var f struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(append([]byte("{"), fields...), &f) != nil || f.Error == "" {
		return string(rest)
	}
	return string(msg) + ": " + f.Error
}

// nodeadmJSONMessage turns zap's JSON entry {"level":"fatal",...,"msg":"MSG","error":"..."}
// into "MSG: ...", as nodeadmMessage does the console one; an entry cut short or without the
// fields is kept as written.
func nodeadmJSONMessage(entry []byte) string {
	var f struct {
		Msg   string `json:"msg"`
		Error string `json:"error"`
	}
	if json.Unmarshal(entry, &f) != nil || f.Msg == "" {
		return string(entry)
	}
	if f.Error == "" {
		return f.Msg
	}
	return f.Msg + ": " + f.Error
}

// cloudInitLine runs the boot log checks on one line of cloud-init-output.log or user-data.log,
// which the bootstrap checks read.
func (a *analysis) cloudInitLine(file string, n int, line []byte) {
	a.ci.scan.match(file, n, line)
	a.bootLine(file, n, line)
}

// bootLine notes what spans lines (cloud-init.log's "Command:" then "Exit code:") and the boot
// time a line gives.
func (a *analysis) bootLine(file string, n int, line []byte) {
	c := &a.ci
	if c.exec.script != "" && c.exec.at == (linePos{file, n - 1}) {
		if m := matchPrefixed(reExecExit, "Exit code: ", line); m != nil {
			c.scripts.add(c.exec.at, path.Base(c.exec.script), string(m[1]))
		}
	}
	c.exec.script = ""
	if a.os.noteOSLine(file, n, line) {
		a.osHint = rules.OSAmazonLinux2023
	}
	if m := matchPrefixed(reExecCommand, "Command: ['", line); m != nil {
		c.exec.at, c.exec.script = linePos{file, n}, string(m[1])
	}
	a.boot.noteCloudInit(file, n, line)
}

// matchPrefixed runs re, anchored at the start of the line, only on a line that starts with its
// literal prefix: most lines do not, and a regexp run takes a machine from a pool that the race
// detector's runs keep empty (megabytes over a bundle of small logs).
func matchPrefixed(re *regexp.Regexp, prefix string, line []byte) [][]byte {
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return nil
	}
	return re.FindSubmatch(line)
}

// readBootLog reads cloud-init.log or one of nodeadm's journals.
func (a *analysis) readBootLog(name string, r io.Reader) error {
	return a.ci.scan.scan(name, r, func(n int, line []byte) { a.bootLine(name, n, line) })
}

// reportCloudInit reports what the boot logs say about the user data's run.
func (a *analysis) reportCloudInit(rep *findings.Report) {
	c := &a.ci
	if len(c.scan.files) > 0 {
		rep.Checked(SectionBootstrap, len(c.scan.files))
	}
	removed := c.removed.hits.count > 0
	// Before the stub (AL2023 AMIs of early to late 2024) there is no banner: the node's OS, as
	// the bundle shows it, and the missing bootstrap.sh say the same.
	al2023, osSays := a.os.al2023()
	absent := !removed && al2023 && c.missingBootstrapLine != ""
	for _, p := range c.scan.patterns {
		h := p.hits
		if h.count == 0 {
			continue
		}
		res := textsafe.ClipRawBytes(fileList(h.files), 300)
		var msg string
		switch p {
		case c.script:
			msg = p.what.Count(h.count) + ": " + c.scripts.list(scriptStatus)
			if removed {
				msg += "; the script called AL2's bootstrap.sh, which AL2023 replaces with a stub that exits 1 (NK639)"
			}
			if absent {
				msg += "; the script called AL2's bootstrap.sh, which this AL2023 AMI does not have (NK639)"
			}
		case c.notFound:
			msg = p.what.Count(h.count) + ": " +
				c.commands.list(func(it posItem) string { return it.text + " (" + it.detail + ")" })
		case c.nodeadm:
			msg = p.what.Count(h.count) + ": " + c.nodeadmErrs.list(nil)
		default:
			msg = p.what.Count(h.count) + ": the user data was written for AL2 and the node runs AL2023, so bootstrap.sh did not initialise it"
		}
		rep.Add(p.rule.New(res, "%s", msg).WithEvidence(h.evidence()...))
	}
	if absent {
		rep.Add(RuleBootstrapRemoved.New(textsafe.ClipRawBytes(c.missingBootstrap.file, 300),
			"the user data calls /etc/eks/bootstrap.sh (%s), which this node does not have, and the node runs AL2023 (%s): the user data was written for AL2, so bootstrap.sh did not initialise it (an AL2023 AMI from before the bootstrap.sh stub)",
			c.missingBootstrapCalled, strings.Join(osSays, "; ")).WithEvidence(c.missingBootstrapLine))
	}
}

// scriptStatus names a failed script with its exit status, and what the usual statuses mean.
func scriptStatus(it posItem) string {
	switch it.detail {
	case "":
		return it.text
	case "127":
		return it.text + " exited with status 127 (a command was not found)"
	case "126":
		return it.text + " exited with status 126 (a command could not be executed)"
	}
	return it.text + " exited with status " + it.detail
}

// firstItems keeps the distinct items a log names, at most maxBootItems of them: those met
// first by file name and line number, whatever order the files are read in (as hits does).
type firstItems struct {
	items []posItem
	more  bool // an item was left out
}

// posItem is an item where it was first met, and its detail (an exit status, where a command
// is) where that was first met.
type posItem struct {
	at, detailAt linePos
	text, detail string
}

// add notes text (clipped) at a position, with a detail or "".
func (f *firstItems) add(at linePos, text, detail string) {
	it := posItem{at: at, detailAt: at, text: textsafe.ClipRawBytes(text, 200), detail: textsafe.ClipRawBytes(detail, 100)}
	if i := slices.IndexFunc(f.items, func(o posItem) bool { return o.text == it.text }); i >= 0 {
		old := f.items[i]
		if old.at.before(it.at) {
			it.at = old.at
		}
		if it.detail == "" || (old.detail != "" && old.detailAt.before(it.detailAt)) {
			it.detail, it.detailAt = old.detail, old.detailAt
		}
		f.items = slices.Delete(f.items, i, i+1)
	}
	i := sort.Search(len(f.items), func(i int) bool { return it.at.before(f.items[i].at) })
	f.items = slices.Insert(f.items, i, it)
	if len(f.items) > maxBootItems {
		f.items, f.more = f.items[:maxBootItems], true
	}
}

// list joins the items for a message, each formatted by format (nil: the text).
func (f *firstItems) list(format func(posItem) string) string {
	out := make([]string, 0, len(f.items)+1)
	for _, it := range f.items {
		if format == nil {
			out = append(out, it.text)
		} else {
			out = append(out, format(it))
		}
	}
	if f.more {
		out = append(out, "and more")
	}
	return strings.Join(out, "; ")
}
