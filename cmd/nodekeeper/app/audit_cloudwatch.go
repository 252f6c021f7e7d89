package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// cloudWatchFlags make `nodekeeper audit` read an EKS cluster's audit log from CloudWatch Logs.
type cloudWatchFlags struct {
	enabled  bool
	logGroup string
	parallel int
	timeout  time.Duration
	aws      awsFlags

	src *cwaudit.Source
}

func (c *cloudWatchFlags) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&c.enabled, "cloudwatch", false, "read the audit log of an EKS cluster from CloudWatch Logs (Logs Insights, filtered by CloudWatch) instead of files")
	f.StringVar(&c.logGroup, "log-group", "", "with --cloudwatch: the log group (default /aws/eks/CLUSTER/cluster, CLUSTER from --eks-cluster)")
	f.IntVar(&c.parallel, "cloudwatch-queries", 4, "with --cloudwatch: Logs Insights queries run at once (the account's limit is shared with everyone)")
	f.DurationVar(&c.timeout, "query-timeout", cwaudit.DefaultQueryTimeout, "with --cloudwatch: how long one Logs Insights query may run; a query still running then is stopped (StopQuery) and the run fails (CloudWatch's own limit is 60 minutes)")
	c.aws.AddFlags(f)
	c.aws.AddClusterFlag(f, "with --cloudwatch")
	// audit reads no cluster, so it has none of the kubectl connection flags, and --cluster
	// could only mean the EKS cluster here: it is kept, deprecated, for scripts that used it
	// before --eks-cluster.
	f.StringVar(&c.aws.eksCluster, "cluster", "", "with --cloudwatch: the EKS cluster (deprecated: --eks-cluster)")
	_ = f.MarkDeprecated("cluster", "use --eks-cluster NAME|ARN (the EKS cluster)")
}

// validate checks the flags that only make sense together.
func (c *cloudWatchFlags) validate(f *pflag.FlagSet, args []string) error {
	if !c.enabled {
		for _, name := range []string{"log-group", "cloudwatch-queries", "query-timeout", "region", "profile", "eks-cluster", "cluster"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s needs --cloudwatch", name)
			}
		}
		return nil
	}
	if len(args) > 0 {
		return errors.New("--cloudwatch reads the log from CloudWatch: drop the file arguments, or drop --cloudwatch to read files")
	}
	if f.Changed("cluster") && f.Changed("eks-cluster") {
		return errors.New("--cluster is the old spelling of --eks-cluster: pass only --eks-cluster")
	}
	if c.parallel < 1 {
		return errors.New("--cloudwatch-queries must be at least 1")
	}
	if c.timeout <= 0 {
		return fmt.Errorf("--query-timeout must be positive (got %s)", c.timeout)
	}
	if c.logGroup == "" {
		name, _, err := c.aws.cluster()
		if err != nil {
			return fmt.Errorf("--cloudwatch needs the log group (/aws/eks/NAME/cluster of the EKS cluster NAME, or --log-group): %w", err)
		}
		c.logGroup = "/aws/eks/" + name + "/cluster"
	}
	return nil
}

// input plans the read (so that a denied or missing log group fails before any analysis) and
// returns the log as one audit input. since and until default to the last hour.
func (c *cloudWatchFlags) input(ctx context.Context, since, until time.Time, stderr io.Writer) (read.Input, error) {
	if until.IsZero() {
		until = time.Now()
	}
	if since.IsZero() {
		since = until.Add(-time.Hour)
		fmt.Fprintf(stderr, "cloudwatch: no --since: reading the last hour, from %s\n", since.UTC().Format(time.RFC3339))
	}
	clients, err := c.aws.clients(ctx)
	if err != nil {
		return read.Input{}, err
	}
	c.checkAuditLogging(ctx, clients, stderr)
	src, err := cwaudit.New(clients.Logs, cwaudit.Options{LogGroup: c.logGroup, Start: since, End: until,
		Parallel: c.parallel, QueryTimeout: c.timeout, Progress: stderr})
	if err != nil {
		return read.Input{}, err
	}
	if err := src.Plan(ctx); err != nil {
		return read.Input{}, err
	}
	c.src = src
	if n := clients.Throttles.Count(); n > 0 {
		fmt.Fprintf(stderr, "cloudwatch: AWS throttled %d calls (retried)\n", n)
	}
	return src.Input(ctx), nil
}

// checkAuditLogging says on stderr when the cluster's audit logging is off, or when that could
// not be checked; the read goes on either way (the log group may hold older events).
func (c *cloudWatchFlags) checkAuditLogging(ctx context.Context, clients *allclients.Clients, stderr io.Writer) {
	cluster := cwaudit.ClusterOfLogGroup(c.logGroup)
	if cluster == "" {
		fmt.Fprintf(stderr, "cloudwatch: %s is not an EKS control plane log group: not checking that audit logging is on\n", textsafe.Escape(c.logGroup))
		return
	}
	st, err := cwaudit.AuditLogging(ctx, clients.EKS, cluster)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "cloudwatch: could not check that audit logging is on: %s\n", textsafe.Escape(err.Error()))
	case !st.Enabled:
		fmt.Fprintf(stderr, "cloudwatch: %s\n", textsafe.Escape(st.Off()))
	}
}
