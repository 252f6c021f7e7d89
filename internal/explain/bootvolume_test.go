package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// withBootVolume gives the zombie's instance its root volume (gp2, 20 GiB: 100 IOPS, 3,000
// while it has burst credits, as the Amazon EBS User Guide's "General Purpose SSD volumes"
// states) and that volume's AWS/EBS metrics as CloudWatch reports them (one-minute Sums of
// VolumeReadOps, Averages of VolumeQueueLength: "Amazon CloudWatch metrics for Amazon EBS"):
// from the second minute after the launch, five minutes at 2,950 IOPS (the burst limit), then
// three calm ones; and, after the boot window, one minute far busier that the story must not
// read. It returns the volume ID.
func (z *zombie) withBootVolume(t *testing.T) string {
	t.Helper()
	inst := &z.cloud.Instances[0]
	vol := "vol-" + z.id[2:]
	inst.RootDeviceName = strp("/dev/xvda")
	inst.BlockDeviceMappings = []ec2types.InstanceBlockDeviceMapping{{DeviceName: strp("/dev/xvda"),
		Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: &vol, Status: ec2types.AttachmentStatusAttached}}}
	size, iops := int32(20), int32(100)
	z.cloud.Volumes = []ec2types.Volume{{VolumeId: &vol, VolumeType: ec2types.VolumeTypeGp2, Size: &size, Iops: &iops, State: ec2types.VolumeStateInUse}}
	start := inst.LaunchTime.Truncate(time.Minute).Add(2 * time.Minute)
	dims := map[string]string{"VolumeId": vol}
	for i, ops := range []float64{2950, 2950, 2950, 2950, 2950, 400, 200, 100} {
		at := start.Add(time.Duration(i) * time.Minute)
		z.cloud.AddMetricSamples("AWS/EBS", "VolumeReadOps", dims, awsfake.MetricSample{Time: at, Value: ops * 60})
		z.cloud.AddMetricSamples("AWS/EBS", "VolumeQueueLength", dims, awsfake.MetricSample{Time: at, Value: ops / 100})
	}
	late := inst.LaunchTime.Add(doctor.DefaultBootWindow + 10*time.Minute)
	z.cloud.AddMetricSamples("AWS/EBS", "VolumeReadOps", dims, awsfake.MetricSample{Time: late, Value: 9999 * 60})
	return vol
}

// TestBootVolumeStory: with --aws, the instance's root volume's IO over its boot window is on
// the timeline (source CloudWatch, read with doctor's GetMetricData reader) with the minutes
// it spent at its limit, and NK805 is among the findings; a minute after the window is not
// read. A refused GetMetricData, and a refused DescribeVolumes, are each a gap naming the IAM
// action and the volume, and the rest of the story goes on.
func TestBootVolumeStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "ip-10-77-0-6.us-west-2.compute.internal"
	z := startZombie(ctx, t, name)
	vol := z.withBootVolume(t)
	tell := func(t *testing.T) *Story {
		t.Helper()
		a := z.aws()
		a.Metrics = z.cloud
		s, err := Tell(ctx, depsFor(t, env.AdminConfig()), Options{Target: z.id, Audit: auditInputs(t), AWS: a})
		if err != nil {
			t.Fatal(err)
		}
		logStory(t, s)
		return s
	}
	launched := z.cloud.Instances[0].LaunchTime.UTC()
	t.Run("IO-bound boot", func(t *testing.T) {
		s := tell(t)
		atLimit := launched.Truncate(time.Minute).Add(2 * time.Minute)
		var limitLine, summary *Line
		for i, l := range s.Timeline {
			if l.Source != SourceCloudWatch {
				continue
			}
			switch {
			case strings.Contains(l.What, "at its IOPS or throughput limit from "+atLimit.Format("15:04")+" to "+atLimit.Add(5*time.Minute).Format("15:04")):
				limitLine = &s.Timeline[i]
			case strings.Contains(l.What, "in the 60m after the launch"):
				summary = &s.Timeline[i]
			}
		}
		if limitLine == nil || !limitLine.Time.Equal(atLimit) || !strings.Contains(limitLine.What, "root volume "+vol+" (gp2, 20 GiB: 100 IOPS (3000 with burst credits), 128 MiB/s)") {
			t.Errorf("no CloudWatch line at %s for the minutes at the limit: %+v", atLimit, limitLine)
		}
		// The window's five busy minutes and three calm ones, not the minute after the window.
		if summary == nil || !summary.Time.Equal(launched.Add(doctor.DefaultBootWindow)) ||
			!strings.Contains(summary.What, "peak 2950 IOPS") || !strings.Contains(summary.What, "5 of 8 minutes at its IOPS or throughput limit: the boot was IO-bound (NK805)") {
			t.Errorf("the boot window's summary: %+v", summary)
		}
		n := 0
		for _, f := range s.Findings {
			if f.Code == doctor.RuleBootVolumeIOBound.Code && f.Resource == "node/"+name && strings.Contains(f.Message, vol) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("NK805 of %s in the findings %d times, want 1", vol, n)
		}
		if len(s.Gaps) != 0 {
			t.Errorf("gaps: %+v", s.Gaps)
		}
		if s.Requests.AWS < 5 { // instance, group, template version, volume, metrics
			t.Errorf("AWS calls counted: %d", s.Requests.AWS)
		}
	})
	for _, denied := range []struct{ perm, source, resource string }{
		{nkaws.PermGetMetricData, SourceCloudWatch, "AWS/EBS metrics of volume " + vol},
		{nkaws.PermDescribeVolumes, SourceEC2, "volume " + vol},
	} {
		t.Run("denied "+denied.perm, func(t *testing.T) {
			z.cloud.Deny[denied.perm] = true
			defer delete(z.cloud.Deny, denied.perm)
			s := tell(t)
			if len(s.Gaps) != 1 || s.Gaps[0].Source != denied.source || s.Gaps[0].Verb != denied.perm || s.Gaps[0].Resource != denied.resource {
				t.Errorf("gaps %+v, want one of %s on %s", s.Gaps, denied.perm, denied.resource)
			}
			found := false
			for _, l := range s.Timeline {
				found = found || l.Gap && strings.Contains(l.What, denied.perm) && strings.Contains(l.What, denied.resource)
				if l.Source == SourceCloudWatch && !l.Gap {
					t.Errorf("a CloudWatch line without the metrics: %+v", l)
				}
			}
			if !found {
				t.Errorf("no gap line naming %s and %s", denied.perm, denied.resource)
			}
			// The rest goes on: the running instance with its group is still told.
			if !hasLine(s, SourceEC2, "instance "+z.id+" is running") {
				t.Errorf("the story stopped at the gap")
			}
			for _, f := range s.Findings {
				if f.Code == doctor.RuleBootVolumeIOBound.Code {
					t.Errorf("NK805 without the metrics: %+v", f)
				}
			}
		})
	}
}
