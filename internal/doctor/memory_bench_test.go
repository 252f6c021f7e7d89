package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// rssTarget is issue 20's bound for doctor's peak RSS with tenant-sized events.
const rssTarget = 256 << 20

// BenchmarkDoctorEventMemory measures the peak RSS of the whole doctor process (the built
// bin/nodekeeper, ru_maxrss of the child) on a control plane holding one pod stuck in
// ContainerCreating and 300 FailedCreatePodSandBox events of 1 MB each (core/v1 Event messages
// have no size limit, and whoever may create Events can write them), with the default
// --chunk-size and with --chunk-size 50. It reports the figure beside the 256 MiB target; it
// asserts nothing about it (a benchmark, not a test).
//
//	make build && go test ./internal/doctor -run '^$' -bench DoctorEventMemory -benchtime 1x -timeout 30m
func BenchmarkDoctorEventMemory(b *testing.B) {
	bin, err := filepath.Abs("../../bin/nodekeeper")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("no built binary (make build): %v", err)
	}
	ctx := context.Background()
	admin := env.AdminClient()
	const ns, events, size = "doctor-rss-bench", 300, 1 << 20
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = admin.CoreV1().Events(ns).DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = admin.CoreV1().Namespaces().Delete(c, ns, metav1.DeleteOptions{})
	})
	// The pod's namespace needs its default ServiceAccount (kube-controller-manager makes it
	// soon; making it here saves the wait).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	now := time.Now()
	pod, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: ns, Name: "stuck", Node: "ip-10-99-0-1.ec2.internal", ScheduledAt: now.Add(-10 * time.Minute)})
	if err != nil {
		b.Fatal(err)
	}
	tail := " failed to assign an IP address to container"
	msg := strings.Repeat("x", size-len(tail)) + tail
	for i := range events {
		at := now.Add(-time.Duration(events-i) * time.Second)
		if _, err := kubeletsim.RecordSandboxFailure(ctx, admin, pod, msg, 1, at, at); err != nil {
			b.Fatalf("event %d: %v", i, err)
		}
	}
	kc := env.KubeconfigPath()
	for _, chunk := range []string{"500", "50"} {
		b.Run("chunk-size="+chunk, func(b *testing.B) {
			for range b.N {
				rss := doctorRSS(b, bin, "doctor", "--kubeconfig", kc, "--chunk-size", chunk, "-o", "json", "--progress", "never")
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
				verdict := "within"
				if rss > rssTarget {
					verdict = "ABOVE"
				}
				fmt.Printf("doctor event memory: %d events of %d MB, one stuck pod, --chunk-size %s: peak RSS %.0f MiB, %s the %d MiB target\n",
					events, size>>20, chunk, float64(rss)/(1<<20), verdict, rssTarget>>20)
			}
		})
	}
}

// doctorRSS runs bin and returns its peak RSS in bytes; exit code 3 (findings) is a success.
func doctorRSS(b *testing.B, bin string, args ...string) int64 {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+b.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage for the child")
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}
