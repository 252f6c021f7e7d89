package auditgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

type line struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	StageTime time.Time `json:"stageTimestamp"`
}

func TestGenerateIsValidOrderedAndDeterministic(t *testing.T) {
	cfg := Config{Nodes: 40, Duration: 4 * time.Minute, Seed: 9, ThrottledClient: true}
	var a, b bytes.Buffer
	ta, err := Generate(&a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same seed gave two different logs")
	}
	if ta.Bytes != int64(a.Len()) {
		t.Fatalf("truth says %d bytes, wrote %d", ta.Bytes, a.Len())
	}
	var prev time.Time
	var n, throttled int64
	for _, l := range bytes.Split(bytes.TrimSuffix(a.Bytes(), []byte("\n")), []byte("\n")) {
		var ev line
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", n+1, err, l)
		}
		n++
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.Stage != "ResponseComplete" || ev.Verb == "" || ev.User.Username == "" {
			t.Fatalf("line %d is not a complete audit event: %s", n, l)
		}
		if ev.StageTime.Before(prev) {
			t.Fatalf("line %d goes back in stageTimestamp: %v after %v", n, ev.StageTime, prev)
		}
		if ev.StageTime.Before(ev.Received) {
			t.Fatalf("line %d ends before it starts", n)
		}
		prev = ev.StageTime
		if ev.ResponseStatus.Code == 429 {
			throttled++
		}
	}
	if n != ta.Events || throttled != ta.Throttled || throttled == 0 {
		t.Fatalf("truth: %d events %d throttled; log: %d events %d throttled", ta.Events, ta.Throttled, n, throttled)
	}
	// Two deletions of each kind: shutdown, modern zombie, legacy zombie (which leaks).
	if len(ta.Deleted) != 6 || len(ta.Zombies) != 4 || len(ta.Leaked) != 2 {
		t.Fatalf("truth %+v", ta)
	}
	zombies := map[string]bool{}
	for _, z := range ta.Zombies {
		zombies[z] = true
	}
	for _, l := range ta.Leaked {
		if !zombies[l] {
			t.Fatalf("leaked %s is not a zombie", l)
		}
	}
}

func TestGenerateBySize(t *testing.T) {
	var b bytes.Buffer
	tr, err := Generate(&b, Config{Bytes: 3 << 20, Nodes: 100, Deletions: -1})
	if err != nil {
		t.Fatal(err)
	}
	if int64(b.Len()) < 3<<20 || int64(b.Len()) > 3<<20+(1<<20) || len(tr.Deleted) != 0 {
		t.Fatalf("%d bytes, truth %+v", b.Len(), tr)
	}
}

// The churn and the heartbeat trouble in the truth are what the log holds, counted here from the
// log alone with encoding/json: deletes of a node lease followed by its re-creation within a
// minute, by actor; the longest gap between two successful lease writes of each kubelet.
func TestGenerateChurnAndHeartbeatTrouble(t *testing.T) {
	var b bytes.Buffer
	tr, err := Generate(&b, Config{Nodes: 20, Duration: 5 * time.Minute, Seed: 4, CleanupCronJob: 40 * time.Second,
		ManualLeaseDelete: true, HeartbeatTrouble: true})
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		line
		ObjectRef struct {
			Resource, Namespace, Name string
		} `json:"objectRef"`
	}
	churns := map[string]int64{}
	deleted := map[string]event{} // lease → its pending delete
	lastOK := map[string]time.Time{}
	maxGap := map[string]time.Duration{}
	throttled := map[string]int{}
	for _, l := range bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n")) {
		var ev event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ObjectRef.Resource != "leases" || ev.ObjectRef.Namespace != "kube-node-lease" {
			continue
		}
		name, code := ev.ObjectRef.Name, ev.ResponseStatus.Code
		switch {
		case ev.Verb == "delete" && code == 200:
			deleted[name] = ev
		case (ev.Verb == "create" || ev.Verb == "update") && code == 201:
			if d, ok := deleted[name]; ok && ev.Received.Sub(d.StageTime) <= time.Minute {
				churns[d.User.Username]++
			}
			delete(deleted, name)
		}
		if ev.User.Username != "system:node:"+name {
			continue
		}
		if code == 429 {
			throttled[name]++
		}
		if (ev.Verb == "update" || ev.Verb == "create") && code >= 200 && code < 300 {
			if last, ok := lastOK[name]; ok {
				maxGap[name] = max(maxGap[name], ev.Received.Sub(last))
			}
			lastOK[name] = ev.Received
		}
	}
	if fmt.Sprint(churns) != fmt.Sprint(tr.Churns) || churns[CleanupUser] <= 5 || churns[AdminUser] != 1 {
		t.Errorf("churns in the log %v, truth %v: want the CronJob over 5, one manual delete", churns, tr.Churns)
	}
	for _, tc := range []struct {
		nodes  []string
		lo, hi time.Duration
	}{{tr.OverGrace, 50 * time.Second, time.Hour}, {tr.NearGrace, 40 * time.Second, 50 * time.Second}, {tr.ThrottledOnly, 0, 40 * time.Second}} {
		if len(tc.nodes) != 1 {
			t.Fatalf("truth %+v", tr)
		}
		n := tc.nodes[0]
		if g := maxGap[n]; g < tc.lo || g >= tc.hi || throttled[n] == 0 {
			t.Errorf("%s: longest gap %s with %d 429s, want a gap in [%s, %s) and 429s", n, g, throttled[n], tc.lo, tc.hi)
		}
	}
}
