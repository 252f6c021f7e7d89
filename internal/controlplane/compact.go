package controlplane

import (
	"context"
	"fmt"
	"strconv"
)

// CompactEtcd compacts etcd's history up to its current revision, as the API server's periodic
// compaction does (every five minutes by default): every resourceVersion older than now, and every
// continue token that carries one, is then expired. It returns the compacted revision.
func (e *Env) CompactEtcd(ctx context.Context) (int64, error) {
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// A range read of a key that does not exist answers with the current revision.
	if err := e.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA=="}, &status); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd range: unreadable revision %q", status.Header.Revision)
	}
	if err := e.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}
