package checks

import (
	"context"

	"k8s.io/client-go/rest"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
)

// Reader is everything a check run reads the cluster through: doctor's facts and plan's input.
// It is the one seam between the loop and the readers, so that pointing the loop at another
// reader of cluster state changes gatherReader alone.
type Reader interface {
	// Facts reads what doctor's checks judge.
	Facts(ctx context.Context, o doctor.Options) (*doctor.Facts, error)
	// Checks are doctor's checks for o with the clients this reader has.
	Checks(o doctor.Options) []doctor.Check
	// PlanInput reads what plan computes the node groups' headroom from; awsNode names the VPC
	// CNI DaemonSet as namespace/name.
	PlanInput(ctx context.Context, awsNode [2]string, reqs []gather.Request) (plan.Input, error)
}

// gatherReader reads through doctor's and plan's own gathers.
type gatherReader struct {
	doctor doctor.Deps
	cfg    *rest.Config
	plan   gather.Options
}

// NewReader reads with clients built from cfg (the controller's configuration): doctor's
// clients through kube.NewClients on a side configuration limited to limit (user agent role
// "checks"), plan's the same way. ec2, when set, lets doctor's EC2 checks and plan's subnet
// limit ask EC2.
func NewReader(cfg *rest.Config, limit kube.RateLimit, ec2 nkaws.EC2API) (Reader, error) {
	side := kube.SideConfig(cfg, "checks", limit)
	clients, err := kube.NewClients(side)
	if err != nil {
		return nil, err
	}
	d := doctor.DepsFrom(clients, nil)
	d.EC2 = ec2
	return &gatherReader{
		doctor: d,
		cfg:    side,
		plan:   gather.Options{EC2: ec2, Limit: limit, ChunkSize: kube.DefaultChunkSize},
	}, nil
}

func (r *gatherReader) Facts(ctx context.Context, o doctor.Options) (*doctor.Facts, error) {
	return doctor.Gather(ctx, r.doctor, o)
}

func (r *gatherReader) Checks(o doctor.Options) []doctor.Check {
	return doctor.ChecksFor(o, r.doctor)
}

func (r *gatherReader) PlanInput(ctx context.Context, awsNode [2]string, reqs []gather.Request) (plan.Input, error) {
	o := r.plan
	o.AWSNodeNamespace, o.AWSNodeName = awsNode[0], awsNode[1]
	return gather.Gather(ctx, r.cfg, o, reqs)
}
