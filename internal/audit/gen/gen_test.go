package gen

import (
	"bytes"
	"testing"
	"time"
)

func TestGenerateDev(t *testing.T) {
	var b bytes.Buffer
	tr, err := Generate(&b, Config{Nodes: 50, Duration: 5 * time.Minute, ThrottledClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", tr)
	t.Logf("%s", b.Bytes()[:2000])
}
