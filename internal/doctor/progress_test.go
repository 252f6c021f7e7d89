package doctor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// doctor tells its progress callback how many configz requests are done out of the Ready nodes:
// first 0, then one more after each request (answered or failed, here refused by the API server's
// proxy), never out of order, and the last call says all were done.
func TestConfigzProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := env.AdminClient()
	const ready = 5
	for i := range ready + 1 {
		name := fmt.Sprintf("ip-10-63-0-%d.ec2.internal", i)
		n, err := admin.CoreV1().Nodes().Create(ctx, benchNode(name, "127.0.0.1", 10250, "v1.30.0"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if i == ready {
			continue // the last one has no status: not Ready, not requested
		}
		n.Status = benchNode(name, "127.0.0.1", 10250, "v1.30.0").Status
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var calls [][2]int
	_, err := runOn(ctx, env.AdminConfig(), Options{SkipPodNetworking: true, Workers: 3, ConfigzProgress: func(done, total int) {
		mu.Lock()
		calls = append(calls, [2]int{done, total})
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 {
		t.Fatal("no progress reported")
	}
	total := calls[0][1]
	if total < ready {
		t.Fatalf("total %d, want at least the %d Ready nodes this test made", total, ready)
	}
	if len(calls) != total+1 {
		t.Fatalf("%d calls %v, want %d: 0, then one per node", len(calls), calls, total+1)
	}
	for i, c := range calls {
		if c != [2]int{i, total} {
			t.Errorf("call %d = %v, want %v", i, c, [2]int{i, total})
		}
	}
}
