package explain

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/instances"
)

// describeInstance is one DescribeInstances call; a refused one is a gap (the IAM action named),
// any other AWS error too: the cluster's side of the story goes on without EC2's.
func (t *teller) describeInstance(ctx context.Context, in *ec2.DescribeInstancesInput) (*ec2types.Instance, error) {
	out, err := t.o.AWS.EC2.DescribeInstances(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t.gap(SourceEC2, nkaws.PermDescribeInstances, describeWhat(in), nkaws.Explain(nkaws.PermDescribeInstances, err))
		return nil, nil
	}
	var newest *ec2types.Instance
	for _, r := range out.Reservations {
		for i := range r.Instances {
			inst := &r.Instances[i]
			if newest == nil || inst.LaunchTime != nil && newest.LaunchTime != nil && inst.LaunchTime.After(*newest.LaunchTime) {
				newest = inst
			}
		}
	}
	return newest, nil
}

func describeWhat(in *ec2.DescribeInstancesInput) string {
	if len(in.InstanceIds) > 0 {
		return "instance " + in.InstanceIds[0]
	}
	if len(in.Filters) > 0 && len(in.Filters[0].Values) > 0 {
		return "instances (" + deref(in.Filters[0].Name) + "=" + in.Filters[0].Values[0] + ")"
	}
	return "instances"
}

// readAWS reads the instance (by the Node's providerID, else by the node's private DNS name),
// its Auto Scaling group and the launch-template version it was launched from.
func (t *teller) readAWS(ctx context.Context) error {
	a := t.o.AWS
	if a == nil {
		return nil
	}
	tg := &t.s.Target
	if t.inst == nil {
		in := &ec2.DescribeInstancesInput{}
		switch {
		case tg.InstanceID != "":
			in.InstanceIds = []string{tg.InstanceID}
		case tg.Node != "":
			in.Filters = []ec2types.Filter{{Name: strp("private-dns-name"), Values: []string{tg.Node}}}
		default:
			return nil
		}
		inst, err := t.describeInstance(ctx, in)
		if err != nil {
			return err
		}
		if inst == nil {
			return nil
		}
		t.inst = &instanceRead{i: *inst}
	}
	inst := t.inst.i
	id := deref(inst.InstanceId)
	tg.InstanceID = id
	if tg.InternalIP == "" {
		tg.InternalIP = deref(inst.PrivateIpAddress)
	}
	if inst.LaunchTime != nil {
		t.add(*inst.LaunchTime, SourceEC2, "", "instance %s (%s) launched in %s, private DNS name %s, IP %s",
			id, inst.InstanceType, zoneOf(inst), orNone(deref(inst.PrivateDnsName)), orNone(deref(inst.PrivateIpAddress)))
	}
	state := "unknown"
	if inst.State != nil {
		state = string(inst.State.Name)
	}
	group := instances.TagValue(inst.Tags, doctor.TagAutoScalingGroup)
	ltID := instances.TagValue(inst.Tags, doctor.TagLaunchTemplateID)
	ltVersion := instances.TagValue(inst.Tags, doctor.TagLaunchTemplateVersion)
	where := "not in an Auto Scaling group"
	if group != "" {
		where = "in Auto Scaling group " + group
	}
	if ng := instances.TagValue(inst.Tags, "eks:nodegroup-name"); ng != "" {
		where += ", node group " + ng
	}
	lt := "no launch template tag"
	if ltID != "" {
		lt = "launch template " + ltID + " version " + orNone(ltVersion)
	}
	reason := ""
	if r := deref(inst.StateTransitionReason); r != "" {
		reason = " (" + r + ")"
	}
	t.add(t.now, SourceEC2, "", "instance %s is %s%s, %s, %s", id, state, reason, where, lt)
	if group != "" && a.AutoScaling != nil {
		groups, err := nkaws.DescribeAutoScalingGroups(ctx, a.AutoScaling, []string{group})
		switch {
		case err != nil:
			t.gap(SourceEC2, nkaws.PermDescribeAutoScalingGroups, "Auto Scaling group "+group, nkaws.Explain(nkaws.PermDescribeAutoScalingGroups, err))
		case len(groups) == 1:
			g := groups[0]
			now := ""
			if g.LaunchTemplate != nil {
				now = ", launches from " + deref(g.LaunchTemplate.LaunchTemplateId) + " version " + deref(g.LaunchTemplate.Version)
			} else if g.MixedInstancesPolicy != nil && g.MixedInstancesPolicy.LaunchTemplate != nil && g.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification != nil {
				s := g.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification
				now = ", launches from " + deref(s.LaunchTemplateId) + " version " + deref(s.Version)
			}
			t.add(t.now, SourceEC2, "", "Auto Scaling group %s: desired %d, min %d, max %d%s", group, num32(g.DesiredCapacity), num32(g.MinSize), num32(g.MaxSize), now)
		}
	}
	if ltID != "" && a.LaunchTemplates != nil {
		if v, err := strconv.ParseInt(ltVersion, 10, 64); err == nil {
			t.readTemplate(ctx, ltID, v)
		}
	}
	return t.readBootVolume(ctx, inst)
}

// readTemplate reads the launch-template version the instance was launched from and judges its
// user data with doctor's (and bundle --user-data's) checks.
func (t *teller) readTemplate(ctx context.Context, id string, version int64) {
	vs, err := nkaws.DescribeLaunchTemplateVersions(ctx, t.o.AWS.LaunchTemplates, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: &id, Versions: []string{strconv.FormatInt(version, 10)}})
	tv := doctor.TemplateVersion{ID: id, Version: version, Users: []string{"instance " + t.s.Target.InstanceID}}
	switch {
	case nkaws.IsAccessDenied(err):
		t.gap(SourceEC2, nkaws.PermDescribeLaunchTemplateVersions, fmt.Sprintf("launch template %s version %d", id, version), nkaws.Explain(nkaws.PermDescribeLaunchTemplateVersions, err))
		return
	case err != nil:
		tv.Err = err.Error()
	case len(vs) == 1:
		tv.Data = vs[0].LaunchTemplateData
		if vs[0].CreateTime != nil {
			t.add(*vs[0].CreateTime, SourceEC2, "", "launch template %s version %d created%s", id, version, describedBy(vs[0].VersionDescription))
		}
	default:
		tv.Err = "EC2 returned no such version"
	}
	t.templates = append(t.templates, tv)
}

func describedBy(desc *string) string {
	if d := deref(desc); d != "" {
		return ": " + d
	}
	return ""
}

func zoneOf(inst ec2types.Instance) string {
	if inst.Placement != nil && inst.Placement.AvailabilityZone != nil {
		return *inst.Placement.AvailabilityZone
	}
	return "an unknown zone"
}

func num32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// registerGrace: an instance younger than this may still be registering (doctor's default).
const registerGrace = 10 * time.Minute
