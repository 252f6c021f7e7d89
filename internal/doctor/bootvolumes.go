package doctor

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Boot volumes (doctor --aws): a node whose root volume sat at its IOPS or throughput limit, or
// ran out of gp2 burst credits, while it pulled its images and started its pods boots slowly,
// and its pods wait in ContainerCreating meanwhile. EC2 (DescribeVolumes) gives each root
// volume's type, size, IOPS and throughput; CloudWatch (GetMetricData, namespace AWS/EBS) how
// busy it was, minute by minute, since the instance launched.

// FactBootVolumes is the root volumes of the Nodes launched within the boot window and their
// metrics.
const FactBootVolumes Fact = "ec2-boot-volumes"

// DefaultBootWindow is how recently a Node's instance must have launched for its boot volume
// to be checked (doctor --boot-window).
const DefaultBootWindow = time.Hour

// BootVolume is the volume a recently launched Node's boot waits on (its root volume, the data
// volume on Bottlerocket) and its per-minute metrics.
type BootVolume struct {
	Node, InstanceID string
	Launched         time.Time
	// What names the volume for people ("root volume"; "" reads as that).
	What   string
	Volume ec2types.Volume
	// The AWS/EBS metrics by minute: VolumeQueueLength (Average), BurstBalance (Minimum,
	// percent; gp2, st1 and sc1 only), and the Sums of VolumeReadOps, VolumeWriteOps,
	// VolumeReadBytes and VolumeWriteBytes over each minute.
	Queue, Burst, ReadOps, WriteOps, ReadBytes, WriteBytes map[time.Time]float64
	// Partial names the metrics CloudWatch answered only in part: the volume is judged on
	// what it returned, and the report says so.
	Partial []string
}

// BootFacts is what the boot volume read found.
type BootFacts struct {
	// Volumes sorted by node name; a Node whose root volume EC2 did not return is left out.
	Volumes []BootVolume
}

// bootMetrics are the AWS/EBS metrics read per volume: the query ID suffix, the metric, the
// statistic, and where the series goes. Metric definitions: Amazon EBS User Guide, "Amazon
// CloudWatch metrics for Amazon EBS" (https://docs.aws.amazon.com/ebs/latest/userguide/using_cloudwatch_ebs.html).
var bootMetrics = []struct {
	id, metric, stat string
	series           func(*BootVolume) *map[time.Time]float64
}{
	{"queue", "VolumeQueueLength", "Average", func(v *BootVolume) *map[time.Time]float64 { return &v.Queue }},
	{"burst", "BurstBalance", "Minimum", func(v *BootVolume) *map[time.Time]float64 { return &v.Burst }},
	{"rops", "VolumeReadOps", "Sum", func(v *BootVolume) *map[time.Time]float64 { return &v.ReadOps }},
	{"wops", "VolumeWriteOps", "Sum", func(v *BootVolume) *map[time.Time]float64 { return &v.WriteOps }},
	{"rbytes", "VolumeReadBytes", "Sum", func(v *BootVolume) *map[time.Time]float64 { return &v.ReadBytes }},
	{"wbytes", "VolumeWriteBytes", "Sum", func(v *BootVolume) *map[time.Time]float64 { return &v.WriteBytes }},
}

// metricPeriod is the period asked for: EBS volumes attached to Nitro instances report every
// minute, and a minute at the limit is what a boot feels.
const metricPeriod = 60

// bottlerocketDataDevice is Bottlerocket's second volume: its root volume holds only the
// read-only OS, the container images and pod storage are on this one (Bottlerocket
// documentation, "Storage"; the EKS-optimized Bottlerocket AMIs map it as /dev/xvdb).
const bottlerocketDataDevice = "/dev/xvdb"

// bootVolumeID is the EBS volume a node's boot waits on, and what it is: the root device's, or
// on Bottlerocket the data volume's. "" when the instance has no such EBS volume.
func bootVolumeID(inst ec2types.Instance, n *corev1.Node) (id, what string) {
	return BootVolumeID(inst, n.Status.NodeInfo.OSImage)
}

// BootVolumeID is the EBS volume the boot of an instance running osImage (the Node's
// status.nodeInfo.osImage; "" when unknown, as for a Node that is gone) waits on, and what it
// is: the root device's, or on Bottlerocket the data volume's. "" when it has no such volume.
func BootVolumeID(inst ec2types.Instance, osImage string) (id, what string) {
	device, what := strDeref(inst.RootDeviceName), "root volume"
	if rules.DetectNodeOS(osImage) == rules.OSBottlerocket {
		device, what = bottlerocketDataDevice, "data volume ("+bottlerocketDataDevice+", Bottlerocket's images)"
	}
	for _, m := range inst.BlockDeviceMappings {
		if strDeref(m.DeviceName) == device && m.Ebs != nil {
			return strDeref(m.Ebs.VolumeId), what
		}
	}
	return "", ""
}

// bootVolumes reads the root volumes of the Nodes whose running instance launched within the
// boot window, then their metrics since launch. AccessDenied leaves the fact missing with the
// permission named; other AWS errors fail the run like the rest of the EC2 section.
func (g *gatherer) bootVolumes(ctx context.Context) error {
	o := g.aws()
	if o.Metrics == nil || !g.f.Has(FactEC2Instances) {
		return nil
	}
	window := o.BootWindow
	if window <= 0 {
		window = DefaultBootWindow
	}
	since := g.f.Now.Add(-window)
	byVolume := map[string]*BootVolume{}
	var ids []string
	for i := range g.f.Nodes {
		n := &g.f.Nodes[i]
		inst, ok := g.f.EC2.ByID[instances.InstanceIDFromProviderID(n.Spec.ProviderID)]
		if !ok || inst.LaunchTime == nil || inst.LaunchTime.Before(since) || inst.State == nil || inst.State.Name != ec2types.InstanceStateNameRunning {
			continue
		}
		if id, what := bootVolumeID(inst, n); id != "" && byVolume[id] == nil {
			byVolume[id] = &BootVolume{Node: n.Name, InstanceID: strDeref(inst.InstanceId), Launched: *inst.LaunchTime, What: what}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	vols, err := describeByID(ids, "volume-id", func(filters []ec2types.Filter) ([]ec2types.Volume, error) {
		return nkaws.DescribeVolumes(ctx, o.API, &ec2.DescribeVolumesInput{Filters: filters})
	})
	if failed, err := g.awsFailed(FactBootVolumes, "EC2", err); failed {
		return err
	}
	for _, v := range vols {
		if b := byVolume[strDeref(v.VolumeId)]; b != nil {
			b.Volume = v
		}
	}
	var found []*BootVolume
	start := g.f.Now
	for _, id := range ids {
		if b := byVolume[id]; b.Volume.VolumeId != nil {
			found = append(found, b)
			start = minTime(start, b.Launched)
		}
	}
	if failed, err := g.awsFailed(FactBootVolumes, "CloudWatch", ReadBootMetrics(ctx, o.Metrics, found, start, g.f.Now)); failed {
		return err
	}
	for _, b := range found {
		g.f.EC2.Boot.Volumes = append(g.f.EC2.Boot.Volumes, *b)
	}
	sort.Slice(g.f.EC2.Boot.Volumes, func(i, j int) bool { return g.f.EC2.Boot.Volumes[i].Node < g.f.EC2.Boot.Volumes[j].Node })
	return nil
}

// ReadBootMetrics reads the AWS/EBS metrics of the boot volumes vols (each with its Volume as
// EC2 described it) from start to end, minute by minute, in as few GetMetricData requests as
// the queries need (six a volume), and fills each volume's series with its minutes from its
// launch on. The error is GetMetricData's, explained (nkaws.Explain: AccessDenied names the
// IAM action).
func ReadBootMetrics(ctx context.Context, api nkaws.CloudWatchAPI, vols []*BootVolume, start, end time.Time) error {
	var queries []cwtypes.MetricDataQuery
	for i, b := range vols {
		for _, m := range bootMetrics {
			queries = append(queries, cwtypes.MetricDataQuery{Id: strp(fmt.Sprintf("v%d_%s", i, m.id)), MetricStat: &cwtypes.MetricStat{
				Period: int32p(metricPeriod), Stat: strp(m.stat),
				Metric: &cwtypes.Metric{Namespace: strp("AWS/EBS"), MetricName: strp(m.metric),
					Dimensions: []cwtypes.Dimension{{Name: strp("VolumeId"), Value: b.Volume.VolumeId}}}}})
		}
	}
	if len(queries) == 0 {
		return nil
	}
	series, err := nkaws.GetMetricData(ctx, api, queries, start.Truncate(time.Minute), end)
	if err != nil {
		return err
	}
	for i, b := range vols {
		for _, m := range bootMetrics {
			pts := map[time.Time]float64{}
			if s := series[fmt.Sprintf("v%d_%s", i, m.id)]; s != nil {
				if s.Partial {
					b.Partial = append(b.Partial, m.metric)
				}
				for t, v := range s.Points {
					if !t.Before(b.Launched.Truncate(time.Minute)) {
						pts[t] = v
					}
				}
			}
			*m.series(b) = pts
		}
	}
	return nil
}

func int32p(v int32) *int32 { return &v }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// volumeLimits are a volume's performance limits from the Amazon EBS User Guide's "Amazon EBS
// volume types" pages (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html,
// .../provisioned-iops.html): zero means not judged.
type volumeLimits struct {
	// IOPS is the baseline; BurstIOPS what a gp2 volume reaches while it has burst credits.
	IOPS, BurstIOPS float64
	// MiBps is the throughput limit; BurstMiBps a gp2 volume's between 170 and 334 GiB while
	// it has burst credits.
	MiBps, BurstMiBps float64
}

// limitsOf derives the limits of a volume from its type, size and provisioned IOPS and
// throughput:
//   - gp2: 3 IOPS per GiB, at least 100 and at most 16,000; volumes under 1,000 GiB burst to
//     3,000 IOPS while they have credits (BurstBalance); throughput 128 MiB/s up to 170 GiB,
//     250 MiB/s from 334 GiB, and between the two 250 MiB/s only while bursting;
//   - gp3: the provisioned IOPS and throughput (3,000 IOPS and 125 MiB/s included when not set);
//   - io1, io2: the provisioned IOPS (throughput is not judged).
//
// Other types (magnetic standard; st1 and sc1 cannot boot) are not judged.
func limitsOf(v ec2types.Volume) (volumeLimits, bool) {
	size := float64(0)
	if v.Size != nil {
		size = float64(*v.Size)
	}
	provisioned := func(p *int32, def float64) float64 {
		if p != nil && *p > 0 {
			return float64(*p)
		}
		return def
	}
	switch v.VolumeType {
	case ec2types.VolumeTypeGp2:
		l := volumeLimits{IOPS: math.Min(math.Max(3*size, 100), 16000)}
		l.BurstIOPS = l.IOPS
		if size < 1000 {
			l.BurstIOPS = math.Max(l.IOPS, 3000)
		}
		switch {
		case size <= 170:
			l.MiBps, l.BurstMiBps = 128, 128
		case size < 334:
			l.MiBps, l.BurstMiBps = 128, 250
		default:
			l.MiBps, l.BurstMiBps = 250, 250
		}
		return l, true
	case ec2types.VolumeTypeGp3:
		iops, mibps := provisioned(v.Iops, 3000), provisioned(v.Throughput, 125)
		return volumeLimits{IOPS: iops, BurstIOPS: iops, MiBps: mibps, BurstMiBps: mibps}, true
	case ec2types.VolumeTypeIo1, ec2types.VolumeTypeIo2:
		if v.Iops == nil {
			return volumeLimits{}, false
		}
		return volumeLimits{IOPS: float64(*v.Iops), BurstIOPS: float64(*v.Iops)}, true
	}
	return volumeLimits{}, false
}

// Thresholds of the boot judgement.
const (
	// atLimit: a minute whose average IOPS or throughput reaches this share of the limit counts
	// as a minute at the limit (CloudWatch's one-minute sums hide shorter peaks, and the
	// volume's own overhead keeps it just under the nominal figure).
	atLimit = 0.9
	// boundMinutes at the limit make a boot IO-bound: one such minute is an image unpacking,
	// several are a node that cannot start its pods.
	boundMinutes = 3
)

// bootVerdict is what the metrics of one boot volume say.
type bootVerdict struct {
	limits        volumeLimits
	judged        bool
	minutesAt     int     // minutes at the IOPS or throughput limit
	peakIOPS      float64 // highest per-minute average IOPS
	peakMiBps     float64
	minBurst      float64 // lowest BurstBalance, -1 without the metric
	peakQueue     float64
	burstOut      bool // BurstBalance reached 0
	firstAt, last time.Time
}

func (v bootVerdict) ioBound() bool { return v.minutesAt >= boundMinutes || v.burstOut }

// BootIO is what the minutes of one boot volume say, for a line of a timeline (explain).
type BootIO struct {
	// Limits are the volume's as the EC2 console shows them ("gp3, 20 GiB: 3000 IOPS,
	// 125 MiB/s"); "" for a type not judged.
	Limits string
	// Minutes with IO figures; MinutesAtLimit of them at 90% of the IOPS or throughput limit,
	// from FirstAtLimit to LastAtLimit (minute starts).
	Minutes, MinutesAtLimit   int
	FirstAtLimit, LastAtLimit time.Time
	// Peaks of the per-minute averages, and of the queue length.
	PeakIOPS, PeakMiBps, PeakQueue float64
	// MinBurst is the lowest BurstBalance (percent), -1 without the metric.
	MinBurst float64
	// IOBound is NK805's verdict: three minutes at the limit, or the burst credits run out.
	IOBound bool
}

// JudgeBootVolume reads a boot volume's minutes against its limits as NK805 does.
func JudgeBootVolume(b BootVolume) BootIO {
	v := judgeBoot(b)
	io := BootIO{MinutesAtLimit: v.minutesAt, FirstAtLimit: v.firstAt, LastAtLimit: v.last, PeakIOPS: v.peakIOPS, PeakMiBps: v.peakMiBps,
		PeakQueue: v.peakQueue, MinBurst: v.minBurst, IOBound: v.ioBound()}
	if v.judged {
		io.Limits = describeLimits(b.Volume, v.limits)
	}
	minutes := map[time.Time]bool{}
	for _, s := range []map[time.Time]float64{b.ReadOps, b.WriteOps, b.ReadBytes, b.WriteBytes} {
		for t := range s {
			minutes[t] = true
		}
	}
	io.Minutes = len(minutes)
	return io
}

// CheckBootVolumes is NK805 over vols: the nodes whose boot volume was IO-bound, with the pods
// of stuck (doctor's Facts.Pods.Stuck) stuck on them.
func CheckBootVolumes(vols []BootVolume, stuck map[string]*StuckPod, now time.Time) []findings.Finding {
	return checkBootVolumes(vols, stuck, now)
}

// judgeBoot reads a boot volume's minutes against its limits.
func judgeBoot(b BootVolume) bootVerdict {
	lim, ok := limitsOf(b.Volume)
	verdict := bootVerdict{limits: lim, judged: ok, minBurst: -1}
	minutes := map[time.Time]bool{}
	for _, s := range []map[time.Time]float64{b.ReadOps, b.WriteOps, b.ReadBytes, b.WriteBytes} {
		for t := range s {
			minutes[t] = true
		}
	}
	for _, q := range b.Queue {
		verdict.peakQueue = math.Max(verdict.peakQueue, q)
	}
	for _, bb := range b.Burst {
		if verdict.minBurst < 0 || bb < verdict.minBurst {
			verdict.minBurst = bb
		}
	}
	verdict.burstOut = verdict.minBurst == 0
	for t := range minutes {
		iops := (b.ReadOps[t] + b.WriteOps[t]) / metricPeriod
		mibps := (b.ReadBytes[t] + b.WriteBytes[t]) / metricPeriod / (1 << 20)
		verdict.peakIOPS = math.Max(verdict.peakIOPS, iops)
		verdict.peakMiBps = math.Max(verdict.peakMiBps, mibps)
		if !ok {
			continue
		}
		// With burst credits left (or no BurstBalance reported) a gp2 volume may burst.
		bal, hasBal := b.Burst[t]
		iopsLimit, mibLimit := lim.BurstIOPS, lim.BurstMiBps
		if hasBal && bal <= 0 {
			iopsLimit, mibLimit = lim.IOPS, lim.MiBps
		}
		if iops >= atLimit*iopsLimit || (mibLimit > 0 && mibps >= atLimit*mibLimit) {
			verdict.minutesAt++
			if verdict.firstAt.IsZero() || t.Before(verdict.firstAt) {
				verdict.firstAt = t
			}
			if t.After(verdict.last) {
				verdict.last = t
			}
		}
	}
	return verdict
}

// describeLimits is the limits as an operator reads them in the EC2 console.
func describeLimits(v ec2types.Volume, l volumeLimits) string {
	size := int32(0)
	if v.Size != nil {
		size = *v.Size
	}
	s := fmt.Sprintf("%s, %d GiB: %.0f IOPS", v.VolumeType, size, l.IOPS)
	if l.BurstIOPS > l.IOPS {
		s += fmt.Sprintf(" (%.0f with burst credits)", l.BurstIOPS)
	}
	if l.MiBps > 0 {
		s += fmt.Sprintf(", %.0f MiB/s", l.MiBps)
		if l.BurstMiBps > l.MiBps {
			s += fmt.Sprintf(" (%.0f with burst credits)", l.BurstMiBps)
		}
	}
	return s
}

// maxStuckListed bounds the stuck pods a boot finding lists.
const maxStuckListed = 10

// checkBootVolumes names the Nodes whose boot volume was IO-bound, with the pods stuck in
// ContainerCreating on them.
func checkBootVolumes(vols []BootVolume, stuck map[string]*StuckPod, now time.Time) []findings.Finding {
	byNode := map[string][]*StuckPod{}
	for _, p := range stuck {
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	var out []findings.Finding
	for _, b := range vols {
		v := judgeBoot(b)
		partial := ""
		if len(b.Partial) > 0 {
			partial = "CloudWatch returned only part of " + strings.Join(b.Partial, ", ") + ": judged on what it returned"
		}
		if !v.ioBound() {
			if partial != "" {
				// Not shown IO-bound, but not shown healthy either: say so rather than nothing.
				out = append(out, RuleBootVolumeIOBound.At(findings.Info, "node/"+b.Node, "%s of %s (%s): %s",
					strDeref(b.Volume.VolumeId), b.InstanceID, b.Node, partial))
			}
			continue
		}
		var why []string
		if v.minutesAt > 0 {
			why = append(why, fmt.Sprintf("%s at its IOPS or throughput limit (%s to %s)", plural(v.minutesAt, "minute"),
				v.firstAt.UTC().Format("15:04"), v.last.UTC().Add(time.Minute).Format("15:04")))
		}
		if v.burstOut {
			why = append(why, "its gp2 burst credits ran out (BurstBalance 0%)")
		}
		pods := byNode[b.Node]
		sort.Slice(pods, func(i, j int) bool {
			return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
		})
		sev, tail := findings.Warning, ""
		if len(pods) > 0 {
			sev, tail = findings.Error, "; "+plural(len(pods), "pod")+" stuck in ContainerCreating on it"
		}
		what := b.What
		if what == "" {
			what = "root volume"
		}
		f := RuleBootVolumeIOBound.At(sev, "node/"+b.Node, "%s %s of %s (launched %s, %s ago) was IO-bound: %s%s",
			what, strDeref(b.Volume.VolumeId), b.InstanceID, b.Launched.UTC().Format(time.RFC3339), lease.Elapsed(now.Sub(b.Launched)),
			strings.Join(why, ", "), tail)
		ev := []string{
			"limits " + describeLimits(b.Volume, v.limits),
			fmt.Sprintf("peak %.0f IOPS, %.1f MiB/s (per-minute averages), queue length up to %.1f", v.peakIOPS, v.peakMiBps, v.peakQueue),
		}
		if v.minBurst >= 0 {
			ev = append(ev, fmt.Sprintf("burst balance down to %.0f%%", v.minBurst))
		}
		if partial != "" {
			ev = append(ev, partial)
		}
		for i, p := range pods {
			if i == maxStuckListed {
				ev = append(ev, "... and "+plural(len(pods)-i, "more stuck pod"))
				break
			}
			ev = append(ev, fmt.Sprintf("stuck pod %s/%s since %s (%s)", p.Namespace, p.Name, p.Since.UTC().Format(time.RFC3339), p.Cause))
		}
		out = append(out, f.WithEvidence(ev...))
	}
	return out
}
