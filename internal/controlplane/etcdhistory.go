package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// The API server's audit log can miss a request: a write that the server commits while it is
// being stopped, or after the request already timed out, leaves no event that shows the version
// it wrote. etcd cannot miss one. With Options.KeepHistory the API server never compacts etcd,
// so every version of every object stays readable at its revision (an object's resourceVersion
// is the etcd revision that wrote it), and a proof can read exactly what existed at any moment.
//
// These readers use etcd's JSON gateway (its v3 API over HTTP, served on the client URL), so the
// test needs no etcd client library.

// storagePrefix is the API server's default --etcd-prefix.
const storagePrefix = "/registry"

// LeaseKey is where the API server stores the Lease namespace/name in etcd.
func LeaseKey(namespace, name string) string {
	return storagePrefix + "/leases/" + namespace + "/" + name
}

// NodeKey is where the API server stores the Node name in etcd (the resource's historical name).
func NodeKey(name string) string { return storagePrefix + "/minions/" + name }

// LeasePrefix is the etcd key prefix of every Lease in namespace.
func LeasePrefix(namespace string) string { return storagePrefix + "/leases/" + namespace + "/" }

// StoredVersion is one version of an object as etcd holds it.
type StoredVersion struct {
	Key            string
	CreateRevision int64
	ModRevision    int64 // the object's resourceVersion
	Value          []byte
}

// Decode returns the stored object with its resourceVersion set (the API server stores objects
// without it; it is the etcd revision that wrote them).
func (v *StoredVersion) Decode() (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(v.Value, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode %s at revision %d: %w", v.Key, v.ModRevision, err)
	}
	if m, ok := obj.(interface{ SetResourceVersion(string) }); ok {
		m.SetResourceVersion(strconv.FormatInt(v.ModRevision, 10))
	}
	return obj, nil
}

// Deletion is one delete of a key: the revision that deleted it and the version it removed.
type Deletion struct {
	Revision int64
	Previous StoredVersion
}

// etcdKV is a key-value pair as the gateway writes it: bytes in base64, int64 as strings.
type etcdKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
}

func (kv etcdKV) stored() StoredVersion {
	return StoredVersion{Key: string(kv.Key), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Value: kv.Value}
}

type etcdHeader struct {
	Revision int64 `json:"revision,string"`
}

// etcdClient talks to etcd's JSON gateway; its timeout only ends a call to an etcd that hangs.
var etcdClient = &http.Client{Timeout: 2 * time.Minute}

// etcdCall posts one JSON request to the gateway and decodes the answer into out (nil: discard).
func (e *Env) etcdCall(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := etcdClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("etcd %s: unreadable answer: %w", path, err)
	}
	return nil
}

// StoredAt returns the version of key that existed at revision rev, or nil when the key did
// not exist then. rev 0 means now. Reading an old revision needs Options.KeepHistory.
func (e *Env) StoredAt(ctx context.Context, key string, rev int64) (*StoredVersion, error) {
	var out struct {
		Kvs []etcdKV `json:"kvs"`
	}
	req := map[string]any{"key": []byte(key), "revision": strconv.FormatInt(rev, 10)}
	if err := e.etcdCall(ctx, "/v3/kv/range", req, &out); err != nil {
		return nil, fmt.Errorf("read %s at revision %d: %w", key, rev, err)
	}
	if len(out.Kvs) == 0 {
		return nil, nil
	}
	v := out.Kvs[0].stored()
	return &v, nil
}

// Deletions returns every delete of a key under prefix since etcd started, in revision order,
// each with the version it removed. It needs Options.KeepHistory and a stopped API server (see
// StopAPIServer): to know where history ends it writes and deletes a marker key under prefix
// itself, which a running API server would try to decode.
func (e *Env) Deletions(ctx context.Context, prefix string) ([]Deletion, error) {
	if !e.api.exited() {
		return nil, errors.New("controlplane: Deletions needs the API server stopped first (StopAPIServer)")
	}
	marker := prefix + "~end-of-history"
	var hdr struct{}
	if err := e.etcdCall(ctx, "/v3/kv/put", map[string]any{"key": []byte(marker), "value": []byte("x")}, &hdr); err != nil {
		return nil, err
	}
	if err := e.etcdCall(ctx, "/v3/kv/deleterange", map[string]any{"key": []byte(marker)}, &hdr); err != nil {
		return nil, err
	}
	watch := map[string]any{"create_request": map[string]any{
		"key": []byte(prefix), "range_end": []byte(prefixEnd(prefix)),
		"start_revision": "1", "prev_kv": true, "filters": []string{"NOPUT"},
	}}
	body, err := json.Marshal(watch)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch stream
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.etcdURL+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("etcd watch %s: %w", prefix, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("etcd watch %s: %s: %s", prefix, resp.Status, msg)
	}
	dec := json.NewDecoder(resp.Body)
	var out []Deletion
	for {
		var msg struct {
			Result *struct {
				CompactRevision int64 `json:"compact_revision,string"`
				Canceled        bool  `json:"canceled"`
				CancelReason    string
				Events          []struct {
					Type   string `json:"type"`
					KV     etcdKV `json:"kv"`
					PrevKV etcdKV `json:"prev_kv"`
				} `json:"events"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("etcd watch %s: history ended before the marker: %w", prefix, err)
		}
		if msg.Error != nil || msg.Result == nil {
			return nil, fmt.Errorf("etcd watch %s: %s", prefix, msg.Error)
		}
		if msg.Result.CompactRevision != 0 || msg.Result.Canceled {
			return nil, fmt.Errorf("etcd watch %s: history compacted at revision %d (start the control plane with KeepHistory)", prefix, msg.Result.CompactRevision)
		}
		for _, ev := range msg.Result.Events {
			if ev.Type != "DELETE" {
				continue
			}
			if string(ev.KV.Key) == marker {
				return out, nil
			}
			out = append(out, Deletion{Revision: ev.KV.ModRevision, Previous: ev.PrevKV.stored()})
		}
	}
}

// prefixEnd is the first key after every key that starts with prefix.
func prefixEnd(prefix string) string {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return "\x00" // every key
}
