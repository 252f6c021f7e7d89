package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

// With --logging-format json a klog call comes out as one JSON object with the message and its
// key/value pairs, on the given stream.
func TestLoggingFormatJSON(t *testing.T) {
	var out bytes.Buffer // the JSON logger writes on the caller's goroutine, unbuffered
	l := NewLoggingFlags()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l.AddFlags(fs)
	if err := fs.Parse([]string{"--logging-format", "json"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(fs, &out); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := logsapi.ResetForTest(nil); err != nil {
			t.Error(err)
		}
	})
	klog.InfoS("Lease deleted", "lease", "kube-node-lease/ip-10-0-0-1.ec2.internal")
	klog.Flush()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want one:\n%s", len(lines), out.String())
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, lines[0])
	}
	if obj["msg"] != "Lease deleted" || obj["lease"] != "kube-node-lease/ip-10-0-0-1.ec2.internal" {
		t.Errorf("log object %v, want msg and lease", obj)
	}
}
