package bundle

// What the bundle itself says about the node's OS, for NK639 on AL2023 AMIs from before the
// bootstrap.sh stub. AL2023 EKS AMIs built before amazon-eks-ami PR 2056 (merged 2024-11-15,
// "feat(al2023): warn about bootstrap.sh usage", which added the stub at /etc/eks/bootstrap.sh)
// have no /etc/eks/bootstrap.sh at all: AL2 user data there fails with bash's "No such file or
// directory" and exit status 127, and no line says AL2023 (awslabs/amazon-eks-ami issues 1885,
// amazon-eks-node-al2023-x86_64-standard-1.30-v20240703, and 1863). The bundle says it
// elsewhere:
//   - kernel/uname.txt, `uname -a` (eks-log-collector.sh get_kernel_info): AL2023's kernels
//     are named amzn2023 ("6.1.94-99.176.amzn2023.x86_64", issue 1885), AL2's amzn2
//     ("5.10.216-204.855.amzn2.x86_64", issue 1833);
//   - nodeadm's units: the collector writes their journals on every systemd host
//     (get_nodeadm_info), so the files alone say nothing; a line of them does, since only AL2023
//     has the units (AL2's journals hold "-- No entries --");
//   - cloud-init's version in its stage lines: 22.2.2 on AL2023 ("Cloud-init v. 22.2.2 finished
//     at ...", issue 2426), 19.3 on AL2 ("Cloud-init v. 19.3-46.amzn2 ..."). Other distributions
//     ship cloud-init 22 too (Ubuntu 22.04), so it is quoted beside the other two and never
//     decides alone.

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

const pUname = "kernel/uname.txt"

var (
	reKernelRelease = regexp.MustCompile(`^\S+ \S+ (\S+\.amzn2023\.\S+)`)
	reCloudInitVer  = regexp.MustCompile(`Cloud-init v\. ((\d{1,4})\.[\w.-]+)`)
)

// nodeOS is what the bundle says of the node's OS, each the first met by file and line.
type nodeOS struct {
	kernel        string // an amzn2023 kernel release from uname -a
	nodeadm       linePos
	nodeadmSeen   bool
	cloudInit     string // cloud-init 22 or later, "22.2.2"
	cloudInitAt   linePos
	cloudInitSeen bool
}

// readUname notes an AL2023 kernel in uname -a's output.
func (a *analysis) readUname(_ string, data []byte) {
	if m := reKernelRelease.FindSubmatch(bytes.TrimSpace(data)); m != nil {
		a.os.kernel = textsafe.ClipRawBytes(string(m[1]), 100) // written by whoever made the bundle
		a.osHint = rules.OSAmazonLinux2023
	}
}

// noteOSLine notes what a boot log line says of the OS: a line of nodeadm's units' journals, or
// cloud-init's version. It says whether the line is nodeadm's (the node runs AL2023).
func (o *nodeOS) noteOSLine(file string, n int, line []byte) bool {
	at := linePos{file, n}
	nodeadm := strings.HasPrefix(file, pNodeadmDir) && bytes.Contains(line, []byte("nodeadm"))
	if nodeadm && (!o.nodeadmSeen || at.before(o.nodeadm)) {
		o.nodeadm, o.nodeadmSeen = at, true
	}
	if !bytes.Contains(line, []byte("Cloud-init v. ")) {
		return nodeadm
	}
	m := reCloudInitVer.FindSubmatch(line)
	if m == nil {
		return nodeadm
	}
	if major, err := strconv.Atoi(string(m[2])); err == nil && major >= 22 && (!o.cloudInitSeen || at.before(o.cloudInitAt)) {
		o.cloudInit, o.cloudInitAt, o.cloudInitSeen = textsafe.ClipRawBytes(string(m[1]), 40), at, true
	}
	return nodeadm
}

// al2023 says whether the bundle shows AL2023 (its kernel or nodeadm's units) and what shows it.
func (o *nodeOS) al2023() (bool, []string) {
	var says []string
	if o.kernel != "" {
		says = append(says, "kernel "+o.kernel+" ("+pUname+")")
	}
	if o.nodeadmSeen {
		says = append(says, "nodeadm's units logged ("+o.nodeadm.file+")")
	}
	if len(says) == 0 {
		return false, nil
	}
	if o.cloudInitSeen {
		says = append(says, "cloud-init "+o.cloudInit+" ("+o.cloudInitAt.file+")")
	}
	return true, says
}
