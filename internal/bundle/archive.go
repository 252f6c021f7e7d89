// Package bundle reads an EKS logs collector bundle (the eks_<instance>_<time>.tar.gz that
// eks-log-collector.sh writes) in place, without extracting anything to disk, and turns the
// evidence of the seed 002 support case into findings: image pull rate limiting, node lease and
// status errors in the kubelet log, ipamd that cannot be reached or cannot reach the API server,
// EC2 API throttling, block IO delay, user data that overrides the hostname, flushes iptables or
// manages Docker on a containerd node, and the kubelet and VPC CNI settings behind them.
//
// Archives are untrusted input: member names with ".." or an absolute path, links, special files,
// duplicate members, members or archives that inflate past a cap and files that are not gzip are
// each a clear error, checked for every member before anything is reported.
package bundle

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Default caps. A real bundle is tens of MB compressed; the kubelet journal for ten days is the
// largest member.
const (
	DefaultMaxMemberSize = 2 << 30 // 2 GiB per member
	DefaultMaxTotalSize  = 8 << 30 // 8 GiB decompressed archive
	DefaultMaxMembers    = 200000
)

// ErrUnsafeArchive is wrapped by every rejection of a hostile or malformed archive.
var ErrUnsafeArchive = errors.New("unsafe or malformed bundle")

func unsafeErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsafeArchive, fmt.Sprintf(format, args...))
}

// Limits caps what an archive may inflate to.
type Limits struct {
	MaxMemberSize int64
	MaxTotalSize  int64
	MaxMembers    int
}

func (l Limits) withDefaults() Limits {
	if l.MaxMemberSize <= 0 {
		l.MaxMemberSize = DefaultMaxMemberSize
	}
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = DefaultMaxTotalSize
	}
	if l.MaxMembers <= 0 {
		l.MaxMembers = DefaultMaxMembers
	}
	return l
}

// countingReader fails once more than max bytes came out of the decompressor: a gzip bomb is
// stopped while it inflates, whatever the tar headers claim.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, unsafeErr("the archive inflates past %d bytes", c.max)
	}
	return n, err
}

// Member is one regular file of the bundle, handed to the visitor as a stream.
type Member struct {
	// Name is the path inside the bundle, cleaned, without "./" or the archive's top directory.
	Name string
	Size int64
}

// walk streams every member of a gzip-compressed tar archive to visit, after validating its
// header. visit must consume what it needs from r before returning; the rest is skipped.
func walk(src io.Reader, limits Limits, visit func(m Member, r io.Reader) error) error {
	limits = limits.withDefaults()
	br := bufio.NewReader(src)
	magic, err := br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		return unsafeErr("not a gzip file (an EKS logs collector bundle is a .tar.gz)")
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return unsafeErr("gzip header: %v", err)
	}
	defer zr.Close()
	cr := &countingReader{r: zr, max: limits.MaxTotalSize}
	tr := tar.NewReader(cr)
	seen := map[string]bool{}
	members := 0
	prefix, prefixSet := "", false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrUnsafeArchive) {
				return err
			}
			return unsafeErr("reading the archive after %d members: %v", members, err)
		}
		members++
		if members > limits.MaxMembers {
			return unsafeErr("more than %d members", limits.MaxMembers)
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse:
		case tar.TypeSymlink:
			return unsafeErr("member %q is a symbolic link to %q; bundles hold regular files only", h.Name, h.Linkname)
		case tar.TypeLink:
			return unsafeErr("member %q is a hard link to %q; bundles hold regular files only", h.Name, h.Linkname)
		default:
			return unsafeErr("member %q has type %q (device, FIFO or unknown); bundles hold regular files only", h.Name, string(h.Typeflag))
		}
		if name == "" {
			return unsafeErr("member %q has an empty name", h.Name)
		}
		if h.Size < 0 || h.Size > limits.MaxMemberSize {
			return unsafeErr("member %q declares %d bytes, above the cap of %d", h.Name, h.Size, limits.MaxMemberSize)
		}
		if seen[name] {
			return unsafeErr("member %q appears twice", h.Name)
		}
		seen[name] = true
		// Bundles are packed from inside the collection directory ("./kubelet/kubelet.log"); a
		// re-packed one may have a single top directory instead ("eks_i-0abc_.../kubelet/...").
		// The first regular file decides.
		if !prefixSet {
			prefix, prefixSet = topDir(name), true
		}
		rel := strings.TrimPrefix(name, prefix)
		if err := visit(Member{Name: rel, Size: h.Size}, io.LimitReader(tr, h.Size)); err != nil {
			return err
		}
	}
	if members == 0 {
		return unsafeErr("the archive has no members")
	}
	// Drain what follows the tar end marker so that a truncated gzip stream is noticed.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		if errors.Is(err, ErrUnsafeArchive) {
			return err
		}
		return unsafeErr("after the last member: %v", err)
	}
	return nil
}

// knownTop are the collector's top-level directories: a name that starts with one of them is not
// inside a wrapping directory.
var knownTop = map[string]bool{
	"kernel": true, "modinfo": true, "system": true, "docker": true, "containerd": true, "storage": true,
	"var_log": true, "networking": true, "sandbox-image": true, "ipamd": true, "sysctls": true,
	"kubelet": true, "nodeadm": true, "cni": true, "gpu": true,
}

func topDir(name string) string {
	first, _, found := strings.Cut(name, "/")
	if !found || knownTop[first] {
		return ""
	}
	return first + "/"
}

// cleanName validates a member name and returns it relative, cleaned and without "./".
func cleanName(raw string) (string, error) {
	if raw == "" {
		return "", unsafeErr("member with an empty name")
	}
	if strings.ContainsRune(raw, 0) {
		return "", unsafeErr("member name %q contains a NUL byte", raw)
	}
	if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, `\`) || (len(raw) >= 2 && raw[1] == ':') {
		return "", unsafeErr("member %q has an absolute path", raw)
	}
	for _, part := range strings.FieldsFunc(raw, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", unsafeErr("member %q escapes the archive with \"..\"", raw)
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	return strings.TrimPrefix(name, "./"), nil
}
