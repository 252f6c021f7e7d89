package collectortar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"testing"
	"time"
)

func TestLayoutAndTarGz(t *testing.T) {
	mtime := time.Date(2024, 3, 4, 9, 15, 0, 0, time.UTC)
	data := TarGz(t, mtime, append(Layout(map[string]string{
		"system/instance-id.txt": "i-1\n", "var_log/aws-routed-eni/ipamd.log": "x", "top.txt": "",
	}), Member{Name: "./l", Typeflag: tar.TypeSymlink, Link: "/"}))
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		name string
		kind byte
		body string
	}
	var got []entry
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s modified at %v, want %v", h.Name, h.ModTime, mtime)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Typeflag, string(b)})
	}
	want := []entry{
		{"./", tar.TypeDir, ""}, {"./system/", tar.TypeDir, ""}, {"./var_log/", tar.TypeDir, ""},
		{"./var_log/aws-routed-eni/", tar.TypeDir, ""}, {"./system/instance-id.txt", tar.TypeReg, "i-1\n"},
		{"./top.txt", tar.TypeReg, ""}, {"./var_log/aws-routed-eni/ipamd.log", tar.TypeReg, "x"}, {"./l", tar.TypeSymlink, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("archive holds\n %v\nwant\n %v", got, want)
	}
}
