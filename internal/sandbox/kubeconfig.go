package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KubeconfigFile is the admin kubeconfig `sandbox --write-kubeconfig` writes. It holds a client
// key with cluster-admin rights on the sandbox, so it is only ever readable by its owner (0600),
// and the path a user names may be precious (~/.kube/config): an existing file is never touched
// without --force, and the file is removed on exit only when this run created it.
//
// The rules, in full:
//   - no file at the path: it is created with O_EXCL at mode 0600 and removed on exit;
//   - a file at the path, no force: refused with an error that names the path and says what to do;
//   - a file at the path, force: the new content is written to a 0600 temporary file in the same
//     directory and renamed over the path (atomic: a reader sees the old or the new file, never half
//     of one; the old file's mode and owner are not kept). The path existed before this run, so on
//     exit it is left as it is: nodekeeper never removes a path it did not create;
//   - on exit a created file is removed only if it is still the file this run wrote (same inode):
//     if somebody replaced it meanwhile, the replacement is theirs and stays.
type KubeconfigFile struct {
	// Path is the absolute path written.
	Path string
	// Replaced says that the path existed and --force replaced it.
	Replaced bool
	written  fs.FileInfo
}

// WriteKubeconfigFile writes data (a kubeconfig) to path by the rules of KubeconfigFile.
func WriteKubeconfigFile(path string, data []byte, force bool) (*KubeconfigFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	kf := &KubeconfigFile{Path: abs}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := writeAndClose(f, data); err != nil {
			os.Remove(abs)
			return nil, fmt.Errorf("write kubeconfig %s: %w", abs, err)
		}
	case errors.Is(err, fs.ErrExist) && !force:
		return nil, fmt.Errorf("%s already exists: nodekeeper does not overwrite it (it may be your kubeconfig); "+
			"choose another path with --write-kubeconfig, or pass --force to replace it", abs)
	case errors.Is(err, fs.ErrExist):
		if info, err := os.Lstat(abs); err == nil && info.IsDir() {
			return nil, fmt.Errorf("--write-kubeconfig %s is a directory: name a file", abs)
		}
		if err := replace(abs, data); err != nil {
			return nil, fmt.Errorf("replace %s: %w", abs, err)
		}
		kf.Replaced = true
	default:
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	if kf.written, err = os.Stat(abs); err != nil {
		return nil, err
	}
	return kf, nil
}

// replace writes data to a 0600 temporary file beside path and renames it over path.
func replace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	// CreateTemp already uses 0600; Chmod makes it independent of that detail (and of the umask).
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := writeAndClose(tmp, data); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func writeAndClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Cleanup removes the file if this run created it and it is still the file written; it reports
// what it did in one line for the sandbox's log ("" when there is nothing to say).
func (k *KubeconfigFile) Cleanup() (string, error) {
	if k.Replaced {
		return fmt.Sprintf("left %s in place (it existed before this run; it now points at the stopped sandbox)", k.Path), nil
	}
	now, err := os.Lstat(k.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !os.SameFile(now, k.written) {
		return fmt.Sprintf("left %s in place: it was replaced after the sandbox wrote it", k.Path), nil
	}
	if err := os.Remove(k.Path); err != nil {
		return "", err
	}
	return "", nil
}
