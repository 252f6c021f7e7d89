package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Leader election defaults: those of the Kubernetes core components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultElectionID    = "nodekeeper-controller"
	// DefaultElectionNamespace is used when neither the flag nor POD_NAMESPACE says otherwise.
	DefaultElectionNamespace = "nodekeeper"
)

// LeaderElectionOptions configure leader election.
type LeaderElectionOptions struct {
	Enabled       bool
	Namespace     string // default: $POD_NAMESPACE, else DefaultElectionNamespace
	Name          string // the Lease's name, default DefaultElectionID
	Identity      string // default: hostname + "_" + a random suffix
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// DefaultElectionNamespaceFromEnv returns $POD_NAMESPACE, else DefaultElectionNamespace.
func DefaultElectionNamespaceFromEnv() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return DefaultElectionNamespace
}

// complete fills in the defaults and checks the timings.
func (o *LeaderElectionOptions) complete() error {
	if !o.Enabled {
		return nil
	}
	if o.Namespace == "" {
		o.Namespace = DefaultElectionNamespaceFromEnv()
	}
	if o.Name == "" {
		o.Name = DefaultElectionID
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		o.Identity = host + "_" + string(uuid.NewUUID())
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod {
		return fmt.Errorf("leader election needs lease duration (%s) > renew deadline (%s) > retry period (%s)",
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}

// electionConfig is the election client's configuration: a copy of base with its own small rate
// limit (kube.LeaderElection) and a request timeout of half the renew deadline. Call it after
// complete.
func (o *LeaderElectionOptions) electionConfig(base *rest.Config) *rest.Config {
	cfg := kube.SideConfig(base, "leader-election", kube.LeaderElection)
	// A renewal must give up well within the renew deadline, so that a hung connection to a
	// restarting API server cannot stall it past the point where another replica may take over.
	if cfg.Timeout == 0 || cfg.Timeout > o.RenewDeadline/2 {
		cfg.Timeout = o.RenewDeadline / 2
	}
	return cfg
}

// runElected stands for election until ctx ends. Every won term runs lead(); a lost term (for
// example renewals failing while the API server restarts) stops the workers and stands again,
// without restarting the process. On shutdown the workers stop before the lease is released.
func (c *Controller) runElected(ctx context.Context) error {
	o := c.opts.LeaderElection
	logger := klog.FromContext(ctx).WithValues("lock", o.Namespace+"/"+o.Name, "identity", o.Identity)
	client := c.deps.Election
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.Name,
		client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: o.Identity, EventRecorder: c.deps.ElectionRecorder})
	if err != nil {
		return err
	}

	// The elector's context outlives ctx until the current term's workers have stopped, so the
	// lease is released (ReleaseOnCancel) only once nothing acts under it any more.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	var mu sync.Mutex
	var term chan struct{} // closed when the current term's workers have stopped
	waitTerm := func() {
		mu.Lock()
		t := term
		mu.Unlock()
		if t != nil {
			<-t
		}
	}
	go func() {
		<-ctx.Done()
		waitTerm()
		cancelElect()
	}()

	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   o.LeaseDuration,
			RenewDeadline:   o.RenewDeadline,
			RetryPeriod:     o.RetryPeriod,
			ReleaseOnCancel: true,
			WatchDog:        c.watch,
			Name:            o.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					done := make(chan struct{})
					mu.Lock()
					term = done
					mu.Unlock()
					defer close(done)
					// Work stops when leadership is lost (lctx) or on shutdown (ctx).
					workCtx, cancel := context.WithCancel(lctx)
					defer cancel()
					stop := context.AfterFunc(ctx, cancel)
					defer stop()
					logger.Info("Became leader")
					c.lead(klog.NewContext(workCtx, logger))
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					if id != o.Identity {
						logger.Info("Observed leader", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		c.watch.SetLeaderElection(le)
		le.Run(electCtx)
		// Run returned: leadership lost, or shutdown. Wait for the term's workers, if any.
		waitTerm()
		if ctx.Err() == nil {
			logger.Info("Lost leadership; workers stopped, standing for election again")
		}
	}
	logger.Info("Leader election stopped")
	return nil
}
