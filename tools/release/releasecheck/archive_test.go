package releasecheck

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// namePolicy decides where an archive entry may go: it returns the entry's path relative to the
// extraction directory, or why the entry has no place in this kind of archive. The release ships
// two layouts (flat nodekeeper archives, a one-level controlplane/ tree), and anything else in
// them is a packaging mistake the checks must report rather than unpack.
type namePolicy func(name string, isDir bool) (string, error)

// flatName admits only regular files with a plain name: the nodekeeper archives are flat.
func flatName(name string, isDir bool) (string, error) {
	if isDir || name != path.Base(name) || name == "." || name == ".." {
		return "", errors.New("is not a plain file name")
	}
	return name, nil
}

// controlPlaneName admits controlplane/ and the files directly in it.
func controlPlaneName(name string, isDir bool) (string, error) {
	clean := path.Clean(name)
	top, rest, _ := strings.Cut(clean, "/")
	if top != "controlplane" || strings.Contains(rest, "/") || rest == ".." || (rest == "") != isDir {
		return "", errors.New("is not controlplane/ or a file in it")
	}
	return clean, nil
}

// extract unpacks a .tar.gz or .zip archive into dir under policy and returns the unpacked
// files' paths relative to dir; any refused entry fails the test.
func extract(t *testing.T, archive, dir string, policy namePolicy) []string {
	t.Helper()
	names, err := unpack(archive, dir, policy)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func unpack(archive, dir string, policy namePolicy) ([]string, error) {
	u := unpacker{archive: archive, dir: dir, policy: policy}
	if strings.HasSuffix(archive, ".zip") {
		return u.names, u.zip()
	}
	err := u.tarGz()
	return u.names, err
}

type unpacker struct {
	archive, dir string
	policy       namePolicy
	names        []string
}

func (u *unpacker) zip() error {
	zr, err := zip.OpenReader(u.archive)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, zf := range zr.File {
		if zf.FileInfo().IsDir() {
			if err := u.dirEntry(zf.Name); err != nil {
				return err
			}
			continue
		}
		if !zf.Mode().IsRegular() {
			return u.refuse(zf.Name, errors.New("is neither a directory nor a regular file"))
		}
		rc, err := zf.Open()
		if err != nil {
			return err
		}
		err = u.file(zf.Name, zf.Mode().Perm(), rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (u *unpacker) tarGz() error {
	f, err := os.Open(u.archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", u.archive, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", u.archive, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.dirEntry(h.Name)
		case tar.TypeReg:
			err = u.file(h.Name, fs.FileMode(h.Mode).Perm(), tr)
		default:
			err = u.refuse(h.Name, errors.New("is neither a directory nor a regular file"))
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) refuse(name string, why error) error {
	return fmt.Errorf("%s: entry %q %w", u.archive, name, why)
}

func (u *unpacker) dirEntry(name string) error {
	rel, err := u.policy(name, true)
	if err != nil {
		return u.refuse(name, err)
	}
	return os.MkdirAll(filepath.Join(u.dir, rel), 0o755)
}

func (u *unpacker) file(name string, mode fs.FileMode, r io.Reader) error {
	rel, err := u.policy(name, false)
	if err != nil {
		return u.refuse(name, err)
	}
	target := filepath.Join(u.dir, rel)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
	if err != nil {
		return err
	}
	// The bound keeps a corrupt archive from filling the disk.
	if _, err := io.Copy(out, io.LimitReader(r, 1<<30)); err != nil {
		out.Close()
		return err
	}
	u.names = append(u.names, rel)
	return out.Close()
}

// entry is one member of an archive built by a test.
type entry struct {
	name string
	kind byte // tar.TypeReg, tar.TypeDir or tar.TypeSymlink
}

// writeArchive writes entries as file, a .zip or else a .tar.gz as unpack tells them apart, each
// regular file holding its own name.
func writeArchive(t *testing.T, file string, entries []entry) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(file, ".zip") {
		writeZip(t, f, entries)
	} else {
		writeTarGz(t, f, entries)
	}
	closeAll(t, f)
}

func writeTarGz(t *testing.T, f io.Writer, entries []entry) {
	t.Helper()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.kind, Mode: 0o755, Linkname: "elsewhere"}
		if e.kind == tar.TypeReg {
			h.Size = int64(len(e.name))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.kind == tar.TypeReg {
			if _, err := io.WriteString(tw, e.name); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeAll(t, tw, gz)
}

func writeZip(t *testing.T, f io.Writer, entries []entry) {
	t.Helper()
	zw := zip.NewWriter(f)
	for _, e := range entries {
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.name); err != nil {
			t.Fatal(err)
		}
	}
	closeAll(t, zw)
}

// closeAll closes an archive's writers in order (the archive, then its compression), so that
// each flushes into the next, failing the test on the first error.
func closeAll(t *testing.T, closers ...io.Closer) {
	t.Helper()
	for _, c := range closers {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The extraction every release check relies on keeps each layout to its own names, needs no
// snapshot, and so runs even where RELEASE_DIST is unset.
func TestUnpack(t *testing.T) {
	reg := func(name string) entry { return entry{name, tar.TypeReg} }
	tests := []struct {
		name    string
		zip     bool
		policy  namePolicy
		entries []entry
		want    []string
		wantErr string
	}{
		{"flat tar", false, flatName, []entry{reg("nodekeeper"), reg("LICENSE")}, []string{"nodekeeper", "LICENSE"}, ""},
		{"flat zip", true, flatName, []entry{reg("nodekeeper.exe"), reg("LICENSE")}, []string{"nodekeeper.exe", "LICENSE"}, ""},
		{"flat tar with a directory", false, flatName, []entry{reg("bin/nodekeeper")}, nil, `entry "bin/nodekeeper" is not a plain file name`},
		{"flat zip climbing out", true, flatName, []entry{reg("../nodekeeper")}, nil, `entry "../nodekeeper" is not a plain file name`},
		{"flat tar symlink", false, flatName, []entry{{"nodekeeper", tar.TypeSymlink}}, nil, "is neither a directory nor a regular file"},
		{"control-plane tree", false, controlPlaneName, []entry{{"controlplane/", tar.TypeDir}, reg("controlplane/etcd"), reg("controlplane/LICENSE")}, []string{"controlplane/etcd", "controlplane/LICENSE"}, ""},
		{"control-plane file outside", false, controlPlaneName, []entry{reg("etcd")}, nil, `entry "etcd" is not controlplane/ or a file in it`},
		{"control-plane too deep", false, controlPlaneName, []entry{reg("controlplane/bin/etcd")}, nil, "is not controlplane/ or a file in it"},
		{"control-plane climbing out", false, controlPlaneName, []entry{reg("controlplane/../../etcd")}, nil, "is not controlplane/ or a file in it"},
		{"control-plane file named like the directory", false, controlPlaneName, []entry{reg("controlplane")}, nil, "is not controlplane/ or a file in it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			archive := filepath.Join(tmp, "a.tar.gz")
			if tc.zip {
				archive = filepath.Join(tmp, "a.zip")
			}
			writeArchive(t, archive, tc.entries)
			dir := filepath.Join(tmp, "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := unpack(archive, dir, tc.policy)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("unpacked %v, want %v", got, tc.want)
			}
			for _, name := range got {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(b) != name {
					t.Errorf("%s holds %q (%v), want its own name", name, b, err)
				}
			}
		})
	}
}
