package explain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
)

// readBootVolume reads the volume the instance's boot waited on (its root volume; on
// Bottlerocket, when the Node still says so, its data volume) and that volume's AWS/EBS
// metrics over the boot window: from the launch to the window's end, or now when that is
// sooner. One DescribeVolumes and one GetMetricData request (six queries of at most one point a
// minute), whatever the window, through doctor's reader (doctor.ReadBootMetrics) and judged by
// doctor's NK805 (doctor.JudgeBootVolume, doctor.CheckBootVolumes in judge). A refused or
// failed read is a gap naming the IAM action and the volume; the story goes on.
func (t *teller) readBootVolume(ctx context.Context, inst ec2types.Instance) error {
	a := t.o.AWS
	if a.Metrics == nil || inst.LaunchTime == nil {
		return nil
	}
	osImage := ""
	if t.node != nil {
		osImage = t.node.n.Status.NodeInfo.OSImage
	}
	volID, what := doctor.BootVolumeID(inst, osImage)
	if volID == "" {
		return nil
	}
	window := a.BootWindow
	if window <= 0 {
		window = doctor.DefaultBootWindow
	}
	launched := inst.LaunchTime.UTC()
	end := launched.Add(window)
	if t.now.Before(end) {
		end = t.now
	}
	vols, err := nkaws.DescribeVolumes(ctx, a.EC2, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{{Name: strp("volume-id"), Values: []string{volID}}}})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.gap(SourceEC2, nkaws.PermDescribeVolumes, "volume "+volID, nkaws.Explain(nkaws.PermDescribeVolumes, err))
		return nil
	}
	if len(vols) == 0 {
		t.add(end, SourceEC2, "", "%s %s of %s: EC2 no longer has it (deleted with its instance?), so its boot IO is not known", what, volID, deref(inst.InstanceId))
		return nil
	}
	b := &doctor.BootVolume{Node: t.s.Target.Node, InstanceID: deref(inst.InstanceId), Launched: launched, What: what, Volume: vols[0]}
	if err := doctor.ReadBootMetrics(ctx, a.Metrics, []*doctor.BootVolume{b}, launched, end); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.gap(SourceCloudWatch, nkaws.PermGetMetricData, "AWS/EBS metrics of volume "+volID, err)
		return nil
	}
	t.boot = b
	io := doctor.JudgeBootVolume(*b)
	head := fmt.Sprintf("%s %s", what, volID)
	if io.Limits != "" {
		head += " (" + io.Limits + ")"
	}
	span := fmt.Sprintf("in the %s after the launch", elapsed(end.Sub(launched)))
	if io.Minutes == 0 {
		t.add(end, SourceCloudWatch, "", "%s: CloudWatch has no IO figures for it %s", head, span)
		return nil
	}
	var figures []string
	figures = append(figures, fmt.Sprintf("peak %.0f IOPS, %.1f MiB/s (per-minute averages), queue length up to %.1f", io.PeakIOPS, io.PeakMiBps, io.PeakQueue))
	if io.MinBurst >= 0 {
		figures = append(figures, fmt.Sprintf("burst balance down to %.0f%%", io.MinBurst))
	}
	verdict := "never at its IOPS or throughput limit"
	if io.MinutesAtLimit > 0 {
		verdict = fmt.Sprintf("%d of %d minutes at its IOPS or throughput limit", io.MinutesAtLimit, io.Minutes)
		t.add(io.FirstAtLimit, SourceCloudWatch, "", "%s at its IOPS or throughput limit from %s to %s",
			head, io.FirstAtLimit.UTC().Format("15:04"), io.LastAtLimit.UTC().Add(time.Minute).Format("15:04"))
	}
	if io.IOBound {
		verdict += ": the boot was IO-bound (NK805)"
	}
	if len(b.Partial) > 0 {
		verdict += "; CloudWatch returned only part of " + strings.Join(b.Partial, ", ")
	}
	t.add(end, SourceCloudWatch, "", "%s %s: %s; %s", head, span, strings.Join(figures, ", "), verdict)
	return nil
}
