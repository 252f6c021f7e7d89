// Package bundle reads an EKS logs collector bundle (the eks_<instance>_<time>.tar.gz that
// eks-log-collector.sh writes) in place, without extracting anything to disk, and turns the
// evidence of a node that fails at scale into findings: image pull rate limiting, node lease and
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
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Default caps. A real bundle is tens of MB compressed; the kubelet journal for ten days is the
// largest member.
const (
	DefaultMaxMemberSize = 2 << 30 // 2 GiB per member
	DefaultMaxTotalSize  = 8 << 30 // 8 GiB decompressed archive
	DefaultMaxMembers    = 200000
	// MaxNameLength bounds a member name. The collector's longest names are well under 200
	// bytes; PAX headers allow names of up to 1 MiB, and 1,800 of those once took 2.4 GB.
	MaxNameLength = 4 << 10
)

// nameInError is how much of a hostile member name an error message quotes.
const nameInError = 120

// quoteName renders an untrusted member name for an error message: escaped, clipped, quoted.
func quoteName(name string) string {
	return `"` + textsafe.Clip(name, nameInError) + `"`
}

// quoteNameRaw renders an untrusted name for a report (a finding, the partial reason): clipped and
// quoted, but kept as written. The findings printers escape it for the terminal, and JSON carries
// the original string.
func quoteNameRaw(name string) string {
	return `"` + textsafe.ClipRaw(name, nameInError) + `"`
}

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

// memberGate validates member headers the same way for every kind of input (tar stream or
// directory): name, type, size, count and duplicates. It remembers a sha256 of each accepted
// name, not the name, so that its memory stays bounded (32 bytes a member) whatever the names.
type memberGate struct {
	limits    Limits
	seen      map[[sha256.Size]byte]struct{}
	members   int
	prefix    string
	prefixSet bool
	// last is the last member accepted, named in errors about what follows it.
	last string
}

func newMemberGate(limits Limits) *memberGate {
	return &memberGate{limits: limits.withDefaults(), seen: map[[sha256.Size]byte]struct{}{}}
}

// count counts one entry of any type against MaxMembers.
func (g *memberGate) count() error {
	g.members++
	if g.members > g.limits.MaxMembers {
		return unsafeErr("more than %d members", g.limits.MaxMembers)
	}
	return nil
}

// accept validates a regular file's name and size and returns the member as visitors see it.
func (g *memberGate) accept(raw string, size int64) (Member, error) {
	name, err := cleanName(raw)
	if err != nil {
		return Member{}, err
	}
	if name == "" {
		return Member{}, unsafeErr("member %s has an empty name", quoteName(raw))
	}
	if size < 0 || size > g.limits.MaxMemberSize {
		return Member{}, unsafeErr("member %s declares %d bytes, above the cap of %d", quoteName(raw), size, g.limits.MaxMemberSize)
	}
	key := sha256.Sum256([]byte(name))
	if _, dup := g.seen[key]; dup {
		return Member{}, unsafeErr("member %s appears twice", quoteName(raw))
	}
	g.seen[key] = struct{}{}
	// Bundles are packed from inside the collection directory ("./kubelet/kubelet.log"); a
	// re-packed one may have a single top directory instead ("eks_i-0abc_.../kubelet/...").
	// The first regular file decides.
	if !g.prefixSet {
		g.prefix, g.prefixSet = topDir(name), true
	}
	g.last = name
	return Member{Name: strings.TrimPrefix(name, g.prefix), Size: size}, nil
}

// truncated turns the decompressor's or tar reader's "unexpected EOF" into an error that says the
// bundle is cut short and where.
func (g *memberGate) truncated(inside string, err error) error {
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	if inside != "" {
		return unsafeErr("the bundle is truncated: it ends inside member %s (%d members read; copy the whole file again)", quoteName(inside), g.members)
	}
	if g.last != "" {
		return unsafeErr("the bundle is truncated: it ends after member %s (%d members read; copy the whole file again)", quoteName(g.last), g.members)
	}
	return unsafeErr("the bundle is truncated: it ends before the first member (copy the whole file again)")
}

// walk streams every member of a gzip-compressed tar archive to visit, after validating its
// header. visit must consume what it needs from r before returning; the rest is skipped.
func walk(src io.Reader, limits Limits, visit func(m Member, r io.Reader) error) error {
	br := bufio.NewReader(src)
	magic, err := br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		return unsafeErr("not a gzip file (an EKS logs collector bundle is a .tar.gz)")
	}
	return walkGzip(br, limits, visit)
}

// walkGzip is walk after the gzip magic was checked.
func walkGzip(br io.Reader, limits Limits, visit func(m Member, r io.Reader) error) error {
	limits = limits.withDefaults()
	zr, cr, err := gunzip(br, limits.MaxTotalSize)
	if err != nil {
		return err
	}
	defer zr.Close()
	return walkTar(cr, limits, visit)
}

// gunzip starts decompressing br (its gzip magic already checked) and caps what is read from it
// at max decompressed bytes. The caller closes zr; cr is what it reads from.
func gunzip(br io.Reader, max int64) (zr *gzip.Reader, cr *countingReader, err error) {
	zr, err = gzip.NewReader(br)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, nil, unsafeErr("the bundle is truncated: it ends before the first member (copy the whole file again)")
		}
		return nil, nil, unsafeErr("gzip header: %v", err)
	}
	return zr, &countingReader{r: zr, max: max}, nil
}

// walkTar reads the decompressed tar stream src, and drains it after the end marker so that a
// truncated gzip stream is noticed.
func walkTar(src io.Reader, limits Limits, visit func(m Member, r io.Reader) error) error {
	g := newMemberGate(limits)
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrUnsafeArchive) {
				return err
			}
			if t := g.truncated("", err); t != nil {
				return t
			}
			if errors.Is(err, tar.ErrFieldTooLong) {
				return unsafeErr("member header after %d members: a name or extended header above the tar reader's 1 MiB limit", g.members)
			}
			return unsafeErr("reading the archive after %d members: %v", g.members, err)
		}
		if err := g.count(); err != nil {
			return err
		}
		// The tar reader has read a PAX name of up to 1 MiB for this one header; it goes no
		// further than this member.
		if len(h.Name) > MaxNameLength {
			return unsafeErr("member %s has a name of %d bytes, above the limit of %d (a collector bundle's names are short)", quoteName(h.Name), len(h.Name), MaxNameLength)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			if _, err := cleanName(h.Name); err != nil {
				return err
			}
			continue
		case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse:
		case tar.TypeSymlink:
			return unsafeErr("member %s is a symbolic link to %s; bundles hold regular files only", quoteName(h.Name), quoteName(h.Linkname))
		case tar.TypeLink:
			return unsafeErr("member %s is a hard link to %s; bundles hold regular files only", quoteName(h.Name), quoteName(h.Linkname))
		default:
			if _, err := cleanName(h.Name); err != nil {
				return err
			}
			return unsafeErr("member %s has type %q (device, FIFO or unknown); bundles hold regular files only", quoteName(h.Name), string(h.Typeflag))
		}
		m, err := g.accept(h.Name, h.Size)
		if err != nil {
			return err
		}
		body := io.LimitReader(tr, h.Size)
		err = visit(m, body)
		if err == nil {
			// Skip what visit left here rather than in tr.Next, so that a stream that ends
			// inside this member is reported as such.
			_, err = io.Copy(io.Discard, body)
		}
		if err != nil {
			if t := g.truncated(m.Name, err); t != nil {
				return t
			}
			if !errors.Is(err, ErrUnsafeArchive) {
				return fmt.Errorf("%w: member %s: %w", ErrUnsafeArchive, quoteName(m.Name), err)
			}
			return err
		}
	}
	if g.members == 0 {
		return unsafeErr("the archive has no members")
	}
	// Drain what follows the tar end marker so that a truncated gzip stream is noticed.
	if _, err := io.Copy(io.Discard, src); err != nil {
		if errors.Is(err, ErrUnsafeArchive) {
			return err
		}
		if t := g.truncated("", err); t != nil {
			return t
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
	if len(raw) > MaxNameLength {
		return "", unsafeErr("member %s has a name of %d bytes, above the limit of %d (a collector bundle's names are short)", quoteName(raw), len(raw), MaxNameLength)
	}
	if strings.ContainsRune(raw, 0) {
		return "", unsafeErr("member name %s contains a NUL byte", quoteName(raw))
	}
	if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, `\`) || (len(raw) >= 2 && raw[1] == ':') {
		return "", unsafeErr("member %s has an absolute path", quoteName(raw))
	}
	for _, part := range strings.FieldsFunc(raw, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", unsafeErr("member %s escapes the archive with \"..\"", quoteName(raw))
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	return strings.TrimPrefix(name, "./"), nil
}
