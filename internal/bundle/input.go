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
		return a.readJournal(name, &countingReader{r: br, max: limits.MaxMemberSize})
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
			return a.readJournal(name, &countingReader{r: zbr, max: limits.MaxMemberSize})
		}
		if perr == nil || errors.Is(perr, io.EOF) {
			return unsafeErr("the gzip file holds neither a tar archive (an EKS logs collector bundle) nor a kubelet journal (journalctl -u kubelet output)")
		}
		// Cut short before a whole header: walkTar says so.
	}
	return walkTar(zbr, limits, a.visit)
}

// readJournal scans a kubelet journal as the bundle's kubelet log.
func (a *analysis) readJournal(name string, r io.Reader) error {
	a.kind = InputJournal
	if err := a.kubeletLog.scan(name, r, nil); err != nil {
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

// walkDir reads an unpacked collector directory as safely as an archive: regular files only
// (a symbolic link, device, FIFO or socket is an error, as in a tar), every path resolved inside
// the directory (os.Root), the same caps on names, sizes, member count and total size, and
// nothing ever written.
func walkDir(dir string, limits Limits, visit func(m Member, r io.Reader) error) error {
	g := newMemberGate(limits)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUnsafeArchive, quoteName(p), err)
		}
		if p == "." {
			return nil
		}
		if err := g.count(); err != nil {
			return err
		}
		if len(p) > MaxNameLength {
			return unsafeErr("%s has a path of %d bytes, above the limit of %d", quoteName(p), len(p), MaxNameLength)
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			return unsafeErr("%s is a symbolic link; a collector directory holds regular files only (unpack the bundle with tar, or pass the .tar.gz)", quoteName(p))
		case !t.IsRegular():
			return unsafeErr("%s is not a regular file (%s); a collector directory holds regular files only", quoteName(p), t.Type())
		}
		// O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO after the listing is
		// neither followed nor waited on; the type is checked again on what was opened.
		f, err := root.OpenFile(p, os.O_RDONLY|noFollowNonBlock, 0)
		if err != nil {
			return fmt.Errorf("%w: opening %s: %w", ErrUnsafeArchive, quoteName(p), err)
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
		total += st.Size()
		if total > g.limits.MaxTotalSize {
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
	})
	if err != nil {
		return err
	}
	if g.members == 0 {
		return unsafeErr("the directory is empty")
	}
	return nil
}
