package bundle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
)

// InputKind says what AnalyzeFile was given.
type InputKind string

// The inputs bundle accepts.
const (
	InputArchive   InputKind = "archive"   // eks-log-collector.sh's .tar.gz
	InputDirectory InputKind = "directory" // the same, unpacked
	InputJournal   InputKind = "journal"   // journalctl -u kubelet output, gzip-compressed or not
)

// journalSniff is how much of a plain input is looked at to recognise a kubelet journal.
const journalSniff = 4 << 10

var reJournalLine = regexp.MustCompile(`^(?:` +
	`-- (?:Logs begin|Journal begins|No entries)` + // journalctl's header
	`|[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ` + // short (default) format
	`|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \S+ [^\s:\[]+(?:\[\d+\])?: ` + // short-iso
	`|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ ` + // a bare klog line (kubelet.log copied off a node)
	`)`)

// looksLikeJournal reports whether the first non-empty line of head is a journal or klog line.
func looksLikeJournal(head []byte) bool {
	for _, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return reJournalLine.Match(line)
	}
	return false
}

// isTarHeader reports whether block (the first 512 bytes of a stream) is a tar header: the
// POSIX/GNU magic, or a valid header checksum for the old format.
func isTarHeader(block []byte) bool {
	if len(block) < 512 {
		return false
	}
	if bytes.HasPrefix(block[257:], []byte("ustar")) || bytes.Count(block[:512], []byte{0}) == 512 {
		return true // a header, or the end marker of an empty archive
	}
	want, err := strconv.ParseUint(string(bytes.Trim(block[148:156], " \x00")), 8, 32)
	if err != nil {
		return false
	}
	var sum uint64
	for i, c := range block[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += uint64(c)
	}
	return sum == want
}

// analyzeStream reads a gzip-compressed tar, or a kubelet journal (gzip-compressed or plain).
func (a *analysis) analyzeStream(r io.Reader, name string) error {
	limits := a.o.Limits.withDefaults()
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		head, _ := br.Peek(journalSniff)
		if !looksLikeJournal(head) {
			return unsafeErr("not a gzip file (an EKS logs collector bundle is a .tar.gz) and not a kubelet journal (journalctl -u kubelet output): pass the bundle, its unpacked directory or the journal")
		}
		return a.readJournal(name, br, limits.MaxMemberSize, "--max-member-size")
	}
	zr, cr, err := gunzip(br, limits.MaxTotalSize)
	if err != nil {
		return err
	}
	defer zr.Close()
	zbr := bufio.NewReader(cr)
	block, perr := zbr.Peek(512)
	if !isTarHeader(block) {
		if looksLikeJournal(block) {
			if limits.MaxTotalSize < limits.MaxMemberSize {
				return a.readJournal(name, zbr, limits.MaxTotalSize, "--max-total-size")
			}
			return a.readJournal(name, zbr, limits.MaxMemberSize, "--max-member-size")
		}
		if perr == nil || errors.Is(perr, io.EOF) {
			return unsafeErr("the gzip file holds neither a tar archive (an EKS logs collector bundle) nor a kubelet journal (journalctl -u kubelet output)")
		}
		// Cut short before a whole header: walkTar says so.
	}
	if err := walkTar(zbr, limits, a.visit); err != nil {
		return err
	}
	return a.recognisedAny()
}

// reKubeletLine is a line the kubelet wrote, in a journal (journalctl's short and short-iso
// formats, identifier kubelet) or bare (klog's header).
var reKubeletLine = regexp.MustCompile(`^(?:` +
	`[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \S+ kubelet(?:\[\d+\])?: ` +
	`|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \S+ kubelet(?:\[\d+\])?: ` +
	`|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ ` +
	`)`)

// readJournal scans a kubelet journal as the bundle's kubelet log. A journal without a line of
// the kubelet (journalctl's "-- No entries --", or another unit's log) is refused: there is
// nothing to check in it.
//
// A journal longer than max bytes (decompressed) is read up to max and reported as partial: a
// ten-day journal, or a gzip bomb of matching lines, still gives the findings of what was read,
// with a warning that the rest was not.
func (a *analysis) readJournal(name string, r io.Reader, max int64, flag string) error {
	a.kind = InputJournal
	lines := 0
	cr := &capReader{r: r, left: max}
	err := a.kubeletLog.scan(name, cr, func(_ int, line []byte) {
		lines++
		if !a.kubeletSeen && reKubeletLine.Match(line) {
			a.kubeletSeen = true
		}
	})
	if err == nil && cr.hit {
		a.partial = fmt.Sprintf("the journal %s is longer than %d bytes (%s): the first %d lines were checked, the rest was not", quoteNameRaw(name), max, flag, lines)
	}
	if err == nil && !a.kubeletSeen {
		return fmt.Errorf("%w: the journal %s holds no line of the kubelet (%d lines read; looked for journalctl lines of the kubelet unit, \"MMM DD hh:mm:ss HOST kubelet[PID]: \", or klog lines, \"E0304 09:11:40.114 ...\"): pass journalctl -u kubelet output",
			ErrNotRecognised, quoteName(name), lines)
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return unsafeErr("the journal %s is truncated (a cut-short gzip stream): copy the whole file again", quoteName(name))
		}
		if errors.Is(err, ErrUnsafeArchive) {
			return err
		}
		return fmt.Errorf("%w: reading the journal %s: %w", ErrUnsafeArchive, quoteName(name), err)
	}
	return nil
}

// dirBatch is how many entries walkDir reads from a directory at a time.
const dirBatch = 256

// MaxDirDepth bounds how deep walkDir descends. The collector's deepest files are four or five
// levels down; every level open at once holds a file descriptor and one batch of entries.
const MaxDirDepth = 32

// capReader hands out at most left bytes of r, then io.EOF; hit says that r had more.
type capReader struct {
	r    io.Reader
	left int64
	hit  bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.hit {
			return 0, io.EOF
		}
		// One byte more tells a stream that ends at the cap from one that goes on.
		var one [1]byte
		n, err := io.ReadAtLeast(c.r, one[:], 1)
		if n > 0 {
			c.hit = true
			return 0, io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// walkDir reads an unpacked collector directory as safely as an archive: regular files only
// (a symbolic link, device, FIFO or socket is an error, as in a tar), every path resolved inside
// the directory (os.Root), the same caps on names, sizes, member count and total size, and
// nothing ever written.
func walkDir(dir string, limits Limits, visit func(m Member, r io.Reader) error) error {
	return dirWalk{limits: limits, batch: dirBatch}.walk(dir, visit)
}

// dirWalk reads a directory tree in batches of entries, counting every entry against
// MaxMembers as it comes, so that a directory of a million files costs one batch of entries
// per open level, not a million, before the cap refuses it.
//
// Entries are visited in the directory's own order (readdir order, as tar packs a directory),
// not sorted: sorting needs every name of a directory in memory. What the report says does
// not depend on that order: the top directory is chosen from the listing of the root (one
// directory and nothing else beside it), and the gather side keeps what it takes from several
// files in an order of their names (scan.go, gather.go), so a directory and any tar of it give
// the same report.
type dirWalk struct {
	limits Limits
	batch  int
	// readDir reads the next batch of a directory; tests count or reorder the entries.
	readDir func(f *os.File, n int) ([]os.DirEntry, error)
}

// dirLevel is one directory being read: its open file, its path inside the root and the rest
// of its current batch.
type dirLevel struct {
	f     *os.File
	path  string
	batch []os.DirEntry
	done  bool
}

// next returns the level's next entry, reading another batch when the current one is used up;
// nil when the directory has no more entries.
func (w *dirWalk) next(l *dirLevel) (os.DirEntry, error) {
	for len(l.batch) == 0 {
		if l.done {
			return nil, nil
		}
		b, err := w.readDir(l.f, w.batch)
		switch {
		case err == io.EOF || (err == nil && len(b) < w.batch):
			l.done = true
		case err != nil:
			return nil, fmt.Errorf("%w: listing %s: %w", ErrUnsafeArchive, quoteName(l.path), err)
		}
		l.batch = b
	}
	d := l.batch[0]
	l.batch[0] = nil
	l.batch = l.batch[1:]
	return d, nil
}

func (w dirWalk) walk(dir string, visit func(m Member, r io.Reader) error) error {
	if w.readDir == nil {
		w.readDir = (*os.File).ReadDir
	}
	w.batch = max(w.batch, 2)
	g := newMemberGate(w.limits)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if g.prefix, err = w.topDir(root); err != nil {
		return err
	}
	g.prefixSet = true
	top, err := root.Open(".")
	if err != nil {
		return err
	}
	stack := []*dirLevel{{f: top, path: "."}}
	defer func() {
		for _, l := range stack {
			l.f.Close()
		}
	}()
	var total int64
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		d, err := w.next(l)
		if err != nil {
			return err
		}
		if d == nil {
			l.f.Close()
			stack = stack[:len(stack)-1]
			continue
		}
		if err := g.count(); err != nil {
			return err
		}
		p := path.Join(l.path, d.Name())
		if len(p) > MaxNameLength {
			return unsafeErr("%s has a path of %d bytes, above the limit of %d", quoteName(p), len(p), MaxNameLength)
		}
		switch t := d.Type(); {
		case t.IsDir():
			if len(stack) >= MaxDirDepth {
				return unsafeErr("%s is nested more than %d directories deep; a collector directory is a few levels deep", quoteName(p), MaxDirDepth)
			}
			f, err := openInRoot(root, p)
			if err != nil {
				return err
			}
			stack = append(stack, &dirLevel{f: f, path: p})
			if st, err := f.Stat(); err != nil || !st.IsDir() {
				return unsafeErr("%s changed from a directory to something else while it was read", quoteName(p))
			}
			continue
		case t&fs.ModeSymlink != 0:
			return unsafeErr("%s is a symbolic link; a collector directory holds regular files only (unpack the bundle with tar, or pass the .tar.gz)", quoteName(p))
		case !t.IsRegular():
			return unsafeErr("%s is not a regular file (%s); a collector directory holds regular files only", quoteName(p), t.Type())
		}
		if err := w.file(root, g, p, &total, visit); err != nil {
			return err
		}
	}
	if g.members == 0 {
		return unsafeErr("the directory is empty")
	}
	return nil
}

// topDir lists the root once, a batch at a time and up to the member cap, and returns the
// directory that wraps the collector's (eks_<instance>_<time>/) when the root holds exactly one
// directory and it is not one of the collector's own (kubelet/, var_log/, ...); files beside
// it do not matter. Decided from the whole listing, not from the first file read, so that it
// does not depend on the directory's order.
func (w *dirWalk) topDir(root *os.Root) (string, error) {
	f, err := root.Open(".")
	if err != nil {
		return "", err
	}
	defer f.Close()
	l := &dirLevel{f: f, path: "."}
	only, n := "", 0
	for range w.limits.withDefaults().MaxMembers + 1 {
		d, err := w.next(l)
		if err != nil || d == nil {
			return only, err
		}
		if !d.IsDir() {
			continue
		}
		if n++; n > 1 || knownTop[d.Name()] {
			return "", nil
		}
		only = d.Name() + "/"
	}
	return "", unsafeErr("more than %d members", w.limits.withDefaults().MaxMembers)
}

// openInRoot opens p inside root with O_NOFOLLOW and O_NONBLOCK: an entry swapped for a link or
// a FIFO after the listing is neither followed nor waited on.
func openInRoot(root *os.Root, p string) (*os.File, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|noFollowNonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrUnsafeArchive, quoteName(p), err)
	}
	return f, nil
}

// file checks one regular file against the caps (its size added to *total) and visits it.
func (w *dirWalk) file(root *os.Root, g *memberGate, p string, total *int64, visit func(m Member, r io.Reader) error) error {
	f, err := openInRoot(root, p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return unsafeErr("%s is not a regular file (%s); a collector directory holds regular files only", quoteName(p), st.Mode().Type())
	}
	m, err := g.accept(p, st.Size())
	if err != nil {
		return err
	}
	*total += st.Size()
	if *total > g.limits.MaxTotalSize {
		return unsafeErr("the directory holds more than %d bytes", g.limits.MaxTotalSize)
	}
	// A file that grows while it is read is read up to the size it had.
	if err := visit(m, io.LimitReader(f, st.Size())); err != nil {
		if errors.Is(err, ErrUnsafeArchive) {
			return err
		}
		return fmt.Errorf("%w: reading %s: %w", ErrUnsafeArchive, quoteName(path.Clean(p)), err)
	}
	return nil
}
