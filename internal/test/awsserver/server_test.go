package awsserver_test

import (
	"context"
	"errors"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
)

var t0 = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

const group = "/aws/eks/prod/cluster"

// newCloud is an account with every field the encoders carry set somewhere, and pages of two
// items so that every paginated call takes several requests.
func newCloud() *awsfake.Cloud {
	s := awssdk.String
	i32 := awssdk.Int32
	tags := func(kv ...string) []ec2types.Tag {
		var out []ec2types.Tag
		for i := 0; i < len(kv); i += 2 {
			out = append(out, ec2types.Tag{Key: s(kv[i]), Value: s(kv[i+1])})
		}
		return out
	}
	instance := func(id, typ, dns string, state ec2types.InstanceStateName, code int32) ec2types.Instance {
		return ec2types.Instance{InstanceId: s(id), ImageId: s("ami-0abcdef1234567890"), InstanceType: ec2types.InstanceType(typ),
			State: &ec2types.InstanceState{Code: i32(code), Name: state}, PrivateDnsName: s(dns), PrivateIpAddress: s("10.0.1.12"),
			LaunchTime: awssdk.Time(t0.Add(-time.Hour)), SubnetId: s("subnet-0a1b"), VpcId: s("vpc-1"),
			Placement: &ec2types.Placement{AvailabilityZone: s("eu-west-1a")}, Architecture: ec2types.ArchitectureValuesX8664,
			Tags: tags("eks:cluster-name", "prod", "karpenter.sh/nodepool", "default"), RootDeviceName: s("/dev/xvda"), RootDeviceType: ec2types.DeviceTypeEbs,
			BlockDeviceMappings: []ec2types.InstanceBlockDeviceMapping{{DeviceName: s("/dev/xvda"), Ebs: &ec2types.EbsInstanceBlockDevice{
				VolumeId: s("vol-" + id[2:]), Status: ec2types.AttachmentStatusAttached, AttachTime: awssdk.Time(t0.Add(-time.Hour)), DeleteOnTermination: awssdk.Bool(true)}}}}
	}
	c := awsfake.New()
	c.PageSize = 2
	c.PollsBeforeComplete = 1
	gone := instance("i-0ccc", "c6i.xlarge", "ip-10-0-1-14.eu-west-1.compute.internal", ec2types.InstanceStateNameTerminated, 48)
	gone.StateTransitionReason = s("User initiated (2024-04-05 05:00:00 GMT)")
	gone.StateReason = &ec2types.StateReason{Code: s("Client.UserInitiatedShutdown"), Message: s("Client.UserInitiatedShutdown: User initiated shutdown")}
	gone.NetworkInterfaces = []ec2types.InstanceNetworkInterface{{NetworkInterfaceId: s("eni-1"), SubnetId: s("subnet-0a1b"), PrivateIpAddress: s("10.0.1.14")}}
	c.Instances = []ec2types.Instance{
		instance("i-0aaa", "m5.large", "ip-10-0-1-12.eu-west-1.compute.internal", ec2types.InstanceStateNameRunning, 16),
		instance("i-0bbb", "m5.xlarge", "ip-10-0-1-13.eu-west-1.compute.internal", ec2types.InstanceStateNamePending, 0),
		gone,
		{InstanceId: s("i-0ddd"), InstanceType: "t3.small", Tags: tags("eks:cluster-name", "other")},
	}
	c.Subnets = []ec2types.Subnet{
		{SubnetId: s("subnet-0a1b"), SubnetArn: s("arn:aws:ec2:eu-west-1:111122223333:subnet/subnet-0a1b"), State: ec2types.SubnetStateAvailable,
			OwnerId: s("111122223333"), VpcId: s("vpc-1"), CidrBlock: s("10.0.1.0/24"), AvailableIpAddressCount: i32(12),
			AvailabilityZone: s("eu-west-1a"), AvailabilityZoneId: s("euw1-az1"), DefaultForAz: awssdk.Bool(false),
			MapPublicIpOnLaunch: awssdk.Bool(false), Tags: tags("Name", "private-a")},
		{SubnetId: s("subnet-0c2d"), VpcId: s("vpc-1"), CidrBlock: s("10.0.2.0/24"), AvailableIpAddressCount: i32(250)},
		{SubnetId: s("subnet-0e3f"), VpcId: s("vpc-2"), CidrBlock: s("10.1.0.0/16"), AvailableIpAddressCount: i32(65000)},
	}
	c.InstanceTypes = []ec2types.InstanceTypeInfo{
		{InstanceType: "m5.large", CurrentGeneration: awssdk.Bool(true), BareMetal: awssdk.Bool(false), Hypervisor: ec2types.InstanceTypeHypervisorNitro,
			VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: i32(2), DefaultCores: i32(1), DefaultThreadsPerCore: i32(2)},
			NetworkInfo: &ec2types.NetworkInfo{NetworkPerformance: s("Up to 10 Gigabit"), MaximumNetworkInterfaces: i32(3), MaximumNetworkCards: i32(1),
				DefaultNetworkCardIndex: i32(0), Ipv4AddressesPerInterface: i32(10), Ipv6AddressesPerInterface: i32(10), Ipv6Supported: awssdk.Bool(true),
				EnaSupport:   ec2types.EnaSupportRequired,
				NetworkCards: []ec2types.NetworkCardInfo{{NetworkCardIndex: i32(0), NetworkPerformance: s("Up to 10 Gigabit"), MaximumNetworkInterfaces: i32(3)}}}},
		{InstanceType: "c6i.32xlarge", Hypervisor: ec2types.InstanceTypeHypervisorNitro, VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: i32(128)},
			NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: i32(14), Ipv4AddressesPerInterface: i32(50)}},
		{InstanceType: "m5.metal", BareMetal: awssdk.Bool(true), VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: i32(96)},
			NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: i32(15), Ipv4AddressesPerInterface: i32(50)}},
	}
	volume := func(id string, typ ec2types.VolumeType, size, iops, throughput int32) ec2types.Volume {
		v := ec2types.Volume{VolumeId: s(id), VolumeType: typ, Size: i32(size), Iops: i32(iops), AvailabilityZone: s("eu-west-1a"),
			State: ec2types.VolumeStateInUse, CreateTime: awssdk.Time(t0.Add(-time.Hour)), SnapshotId: s("snap-0123"), Encrypted: awssdk.Bool(true),
			MultiAttachEnabled: awssdk.Bool(false), Tags: tags("eks:cluster-name", "prod"),
			Attachments: []ec2types.VolumeAttachment{{VolumeId: s(id), InstanceId: s("i-" + id[4:]), Device: s("/dev/xvda"),
				State: ec2types.VolumeAttachmentStateAttached, AttachTime: awssdk.Time(t0.Add(-time.Hour)), DeleteOnTermination: awssdk.Bool(true)}}}
		if throughput > 0 {
			v.Throughput = i32(throughput)
		}
		return v
	}
	c.Volumes = []ec2types.Volume{volume("vol-0aaa", ec2types.VolumeTypeGp3, 80, 3000, 125), volume("vol-0bbb", ec2types.VolumeTypeGp2, 20, 100, 0),
		volume("vol-0ccc", ec2types.VolumeTypeIo2, 100, 5000, 0)}
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Minute)
		for _, vol := range []string{"vol-0aaa", "vol-0bbb"} {
			dims := map[string]string{"VolumeId": vol}
			c.AddMetricSamples("AWS/EBS", "VolumeReadOps", dims, awsfake.MetricSample{Time: at, Value: float64(6000 * (i + 1))})
			c.AddMetricSamples("AWS/EBS", "VolumeQueueLength", dims, awsfake.MetricSample{Time: at, Value: 0.5}, awsfake.MetricSample{Time: at.Add(30 * time.Second), Value: 1.5})
		}
	}
	c.Clusters["prod"] = ekstypes.Cluster{Name: s("prod"), Arn: s("arn:aws:eks:eu-west-1:111122223333:cluster/prod"),
		CreatedAt: awssdk.Time(t0.Add(-24 * time.Hour)), Version: s("1.31"), Endpoint: s("https://ABCD.gr7.eu-west-1.eks.amazonaws.com"),
		RoleArn: s("arn:aws:iam::111122223333:role/eks"), Status: ekstypes.ClusterStatusActive, PlatformVersion: s("eks.12"),
		Tags: map[string]string{"team": "infra"},
		Logging: &ekstypes.Logging{ClusterLogging: []ekstypes.LogSetup{
			{Types: []ekstypes.LogType{ekstypes.LogTypeApi, ekstypes.LogTypeAudit}, Enabled: awssdk.Bool(true)},
			{Types: []ekstypes.LogType{ekstypes.LogTypeScheduler}, Enabled: awssdk.Bool(false)}}},
		ResourcesVpcConfig: &ekstypes.VpcConfigResponse{SubnetIds: []string{"subnet-0a1b", "subnet-0c2d"}, SecurityGroupIds: []string{"sg-1"},
			ClusterSecurityGroupId: s("sg-2"), VpcId: s("vpc-1"), EndpointPublicAccess: true},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: s("172.20.0.0/16"), IpFamily: ekstypes.IpFamilyIpv4}}
	c.Nodegroups = []ekstypes.Nodegroup{
		{NodegroupName: s("ng-a"), NodegroupArn: s("arn:aws:eks:eu-west-1:111122223333:nodegroup/prod/ng-a/1"), ClusterName: s("prod"),
			Version: s("1.31"), ReleaseVersion: s("1.31.3-20250103"), CreatedAt: awssdk.Time(t0.Add(-2 * time.Hour)), Status: ekstypes.NodegroupStatusActive,
			CapacityType: ekstypes.CapacityTypesOnDemand, ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: i32(1), MaxSize: i32(5), DesiredSize: i32(3)},
			InstanceTypes: []string{"m5.large"}, Subnets: []string{"subnet-0a1b"}, AmiType: ekstypes.AMITypesAl2023X8664Standard,
			NodeRole: s("arn:aws:iam::111122223333:role/node"), Labels: map[string]string{"team": "a"}, Tags: map[string]string{"env": "prod"},
			LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Name: s("workers"), Version: s("2"), Id: s("lt-0abc")}},
		{NodegroupName: s("ng-b"), ClusterName: s("prod")},
		{NodegroupName: s("ng-c"), ClusterName: s("prod")},
		{NodegroupName: s("ng-other"), ClusterName: s("staging")},
	}
	for v := int64(1); v <= 3; v++ {
		c.LaunchTemplateVersions = append(c.LaunchTemplateVersions, ec2types.LaunchTemplateVersion{LaunchTemplateId: s("lt-0abc"),
			LaunchTemplateName: s("workers"), VersionNumber: awssdk.Int64(v), VersionDescription: s("v" + string(rune('0'+v))),
			CreateTime: awssdk.Time(t0.Add(time.Duration(v) * time.Hour)), CreatedBy: s("arn:aws:iam::111122223333:user/ops"), DefaultVersion: awssdk.Bool(v == 2),
			LaunchTemplateData: &ec2types.ResponseLaunchTemplateData{ImageId: s("ami-0abcdef1234567890"), InstanceType: "m5.large", KeyName: s("ops"),
				UserData: awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod\n", v == 3)}})
	}
	c.AutoScalingGroups = []asgtypes.AutoScalingGroup{
		{AutoScalingGroupName: s("asg-a"), AutoScalingGroupARN: s("arn:aws:autoscaling:eu-west-1:111122223333:autoScalingGroup:1:autoScalingGroupName/asg-a"),
			LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: s("lt-0abc"), LaunchTemplateName: s("workers"), Version: s("$Latest")},
			MinSize:        i32(1), MaxSize: i32(5), DesiredCapacity: i32(2), AvailabilityZones: []string{"eu-west-1a", "eu-west-1b"}, HealthCheckType: s("EC2"),
			CreatedTime: awssdk.Time(t0.Add(-48 * time.Hour)), VPCZoneIdentifier: s("subnet-0a1b,subnet-0c2d"),
			Instances: []asgtypes.Instance{{InstanceId: s("i-0aaa"), InstanceType: s("m5.large"), AvailabilityZone: s("eu-west-1a"),
				LifecycleState: asgtypes.LifecycleStateInService, HealthStatus: s("Healthy"), ProtectedFromScaleIn: awssdk.Bool(false),
				LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: s("lt-0abc"), LaunchTemplateName: s("workers"), Version: s("3")}}},
			Tags: []asgtypes.TagDescription{{ResourceId: s("asg-a"), ResourceType: s("auto-scaling-group"), Key: s("team"), Value: s("a"), PropagateAtLaunch: awssdk.Bool(true)}}},
		{AutoScalingGroupName: s("asg-mixed"), MixedInstancesPolicy: &asgtypes.MixedInstancesPolicy{LaunchTemplate: &asgtypes.LaunchTemplate{
			LaunchTemplateSpecification: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: s("lt-0abc"), Version: s("$Default")}}}},
		{AutoScalingGroupName: s("asg-c")},
	}
	c.Filters[`@message like /"kind":"Event"/`] = func(m string) bool { return strings.Contains(m, `"kind":"Event"`) }
	c.Filters[`{ $.kind = "Event" }`] = func(m string) bool { return strings.Contains(m, `"kind":"Event"`) }
	for i := range 5 {
		c.AddLogEvents(group,
			awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b", Timestamp: t0.Add(time.Duration(i) * time.Minute).UnixMilli(), Message: `{"kind":"Event","n":` + string(rune('0'+i)) + `}`},
			awsfake.LogEvent{Stream: "authenticator-0a1b", Timestamp: t0.Add(time.Duration(i) * time.Minute).UnixMilli(), Message: "not audit"})
	}
	return c
}

// load builds the clients as the commands do: Load through the SDK's default configuration
// chain, pointed at the server by the environment alone.
func load(t *testing.T, srv *awsserver.Server) *allclients.Clients {
	t.Helper()
	srv.Setenv(t, "eu-west-1")
	c, err := allclients.Load(context.Background(), nkaws.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// step is one use of the API, returning what it decoded (no SDK metadata) for comparison.
type step struct {
	name       string
	permission string
	ops        []string // the requests it makes when nothing fails
	run        func(ctx context.Context, c *allclients.Clients) (any, error)
}

var steps = []step{
	{"DescribeInstances", nkaws.PermDescribeInstances, []string{"ec2:DescribeInstances", "ec2:DescribeInstances"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeInstances(ctx, c.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
				{Name: awssdk.String("tag:eks:cluster-name"), Values: []string{"prod"}},
				{Name: awssdk.String("instance-state-name"), Values: []string{"pending", "running", "terminated"}}}})
		}},
	{"DescribeInstancesByID", nkaws.PermDescribeInstances, []string{"ec2:DescribeInstances"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeInstances(ctx, c.EC2, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0ddd", "i-0aaa"}})
		}},
	{"DescribeSubnets", nkaws.PermDescribeSubnets, []string{"ec2:DescribeSubnets", "ec2:DescribeSubnets"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeSubnets(ctx, c.EC2, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0a1b", "subnet-0c2d", "subnet-0e3f"}})
		}},
	{"DescribeInstanceTypes", nkaws.PermDescribeInstanceTypes, []string{"ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypes"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeInstanceTypes(ctx, c.EC2, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "c6i.32xlarge", "m5.metal"}})
		}},
	{"FilterLogEvents", nkaws.PermFilterLogEvents, []string{"logs:FilterLogEvents", "logs:FilterLogEvents", "logs:FilterLogEvents"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			var evs []logtypes.FilteredLogEvent
			err := allclients.FilterLogEvents(ctx, c.Logs, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: awssdk.String(group),
				LogStreamNamePrefix: awssdk.String("kube-apiserver-audit"), FilterPattern: awssdk.String(`{ $.kind = "Event" }`),
				StartTime: awssdk.Int64(t0.UnixMilli()), EndTime: awssdk.Int64(t0.Add(time.Hour).UnixMilli())},
				func(page []logtypes.FilteredLogEvent) error { evs = append(evs, page...); return nil })
			return evs, err
		}},
	{"Insights", nkaws.PermStartQuery, []string{"logs:StartQuery", "logs:GetQueryResults", "logs:GetQueryResults", "logs:StopQuery"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			q, err := c.Logs.StartQuery(ctx, &cloudwatchlogs.StartQueryInput{LogGroupName: awssdk.String(group),
				StartTime: awssdk.Int64(t0.Unix()), EndTime: awssdk.Int64(t0.Add(time.Hour).Unix()),
				QueryString: awssdk.String("fields @timestamp, @message\n| filter @logStream like /^kube-apiserver-audit/\n| filter @message like /\"kind\":\"Event\"/\n| sort @timestamp desc\n| limit 3")})
			if err != nil {
				return nil, nkaws.Explain(nkaws.PermStartQuery, err)
			}
			var got []any
			for range 2 { // Running, then Complete
				r, err := c.Logs.GetQueryResults(ctx, &cloudwatchlogs.GetQueryResultsInput{QueryId: q.QueryId})
				if err != nil {
					return nil, nkaws.Explain(nkaws.PermGetQueryResults, err)
				}
				got = append(got, r.Status, *r.Statistics, r.Results)
			}
			stop, err := c.Logs.StopQuery(ctx, &cloudwatchlogs.StopQueryInput{QueryId: q.QueryId})
			if err != nil {
				return nil, nkaws.Explain(nkaws.PermStopQuery, err)
			}
			return append(got, *q.QueryId, stop.Success), nil
		}},
	{"DescribeCluster", nkaws.PermDescribeCluster, []string{"eks:DescribeCluster"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return allclients.DescribeCluster(ctx, c.EKS, "prod")
		}},
	{"DescribeVolumes", nkaws.PermDescribeVolumes, []string{"ec2:DescribeVolumes", "ec2:DescribeVolumes"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeVolumes(ctx, c.EC2, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{
				{Name: awssdk.String("volume-id"), Values: []string{"vol-0aaa", "vol-0bbb", "vol-0ccc", "vol-0zzz"}}}})
		}},
	// Three queries in pages of two; the third names a metric without samples.
	{"GetMetricData", nkaws.PermGetMetricData, []string{"cloudwatch:GetMetricData", "cloudwatch:GetMetricData"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			q := func(id, vol, metric, stat string) cwtypes.MetricDataQuery {
				return cwtypes.MetricDataQuery{Id: awssdk.String(id), MetricStat: &cwtypes.MetricStat{Period: awssdk.Int32(60), Stat: awssdk.String(stat),
					Metric: &cwtypes.Metric{Namespace: awssdk.String("AWS/EBS"), MetricName: awssdk.String(metric),
						Dimensions: []cwtypes.Dimension{{Name: awssdk.String("VolumeId"), Value: awssdk.String(vol)}}}}}
			}
			return nkaws.GetMetricData(ctx, c.CloudWatch, []cwtypes.MetricDataQuery{
				q("ops_a", "vol-0aaa", "VolumeReadOps", "Sum"), q("queue_b", "vol-0bbb", "VolumeQueueLength", "Maximum"),
				q("burst_a", "vol-0aaa", "BurstBalance", "Minimum")}, t0.Add(time.Minute), t0.Add(time.Hour))
		}},
	{"ListNodegroups", nkaws.PermListNodegroups, []string{"eks:ListNodegroups", "eks:ListNodegroups"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return allclients.ListNodegroups(ctx, c.Nodegroups, "prod")
		}},
	{"DescribeNodegroup", nkaws.PermDescribeNodegroup, []string{"eks:DescribeNodegroup"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return allclients.DescribeNodegroup(ctx, c.Nodegroups, "prod", "ng-a")
		}},
	{"DescribeLaunchTemplateVersions", nkaws.PermDescribeLaunchTemplateVersions, []string{"ec2:DescribeLaunchTemplateVersions", "ec2:DescribeLaunchTemplateVersions"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeLaunchTemplateVersions(ctx, c.LaunchTemplates, &ec2.DescribeLaunchTemplateVersionsInput{
				LaunchTemplateId: awssdk.String("lt-0abc"), Versions: []string{"1", "$Default", "$Latest"}})
		}},
	{"DescribeAutoScalingGroups", nkaws.PermDescribeAutoScalingGroups, []string{"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingGroups"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			// With their instances, so that every field the encoder carries crosses the wire.
			var out []asgtypes.AutoScalingGroup
			p := autoscaling.NewDescribeAutoScalingGroupsPaginator(c.AutoScaling, &autoscaling.DescribeAutoScalingGroupsInput{
				AutoScalingGroupNames: []string{"asg-a", "asg-mixed", "asg-c", "asg-none"}})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					return nil, nkaws.Explain(nkaws.PermDescribeAutoScalingGroups, err)
				}
				out = append(out, page.AutoScalingGroups...)
			}
			return out, nil
		}},
	{"DescribeAutoScalingGroupsWithoutInstances", nkaws.PermDescribeAutoScalingGroups, []string{"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingGroups"},
		func(ctx context.Context, c *allclients.Clients) (any, error) {
			return nkaws.DescribeAutoScalingGroups(ctx, c.AutoScaling, []string{"asg-a", "asg-mixed", "asg-c"})
		}},
}

// TestServesWhatTheCloudAnswers: through the real SDK clients built by Load, each operation
// decodes what the Cloud itself answers, in the requests the paginators make, signed for the
// configured region.
func TestServesWhatTheCloudAnswers(t *testing.T) {
	ctx := context.Background()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			direct := newCloud()
			want, err := st.run(ctx, &allclients.Clients{EC2: direct, Logs: direct, EKS: direct, LaunchTemplates: direct, Nodegroups: direct, AutoScaling: direct, CloudWatch: direct})
			if err != nil {
				t.Fatalf("direct: %v", err)
			}
			srv := awsserver.Start(t, newCloud())
			got, err := st.run(ctx, load(t, srv))
			if err != nil {
				t.Fatalf("over the wire: %v", err)
			}
			if !same(reflect.ValueOf(got), reflect.ValueOf(want)) {
				t.Errorf("over the wire\n got %#v\nwant %#v", got, want)
			}
			if ops := srv.Operations(); !slices.Equal(ops, st.ops) {
				t.Errorf("requests %v, want %v", ops, st.ops)
			}
			for i, c := range srv.Calls() {
				if c.Region != "eu-west-1" || c.ErrorCode != "" || c.Input == nil {
					t.Errorf("call %d: %+v", i, c)
				}
			}
		})
	}
}

// TestPaginationTokensTravel: the second page is asked for with the first page's token, and the
// filters reach the Cloud as the SDK sent them.
func TestPaginationTokensTravel(t *testing.T) {
	srv := awsserver.Start(t, newCloud())
	if _, err := steps[0].run(context.Background(), load(t, srv)); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	first, second := calls[0].Input.(*ec2.DescribeInstancesInput), calls[1].Input.(*ec2.DescribeInstancesInput)
	if first.NextToken != nil || second.NextToken == nil || *second.NextToken != "2" {
		t.Errorf("tokens %v then %v", first.NextToken, second.NextToken)
	}
	if len(second.Filters) != 2 || *second.Filters[1].Name != "instance-state-name" || !slices.Equal(second.Filters[1].Values, []string{"pending", "running", "terminated"}) {
		t.Errorf("filters %+v", second.Filters)
	}
}

// TestDeniedOverTheWire: a permission the Cloud denies comes back as the service's own error
// (UnauthorizedOperation from EC2, AccessDeniedException from the JSON services), which
// internal/aws names as the missing permission, without retries.
func TestDeniedOverTheWire(t *testing.T) {
	ctx := context.Background()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			cloud := newCloud()
			cloud.Deny[st.permission] = true
			srv := awsserver.Start(t, cloud)
			_, err := st.run(ctx, load(t, srv))
			var ad *nkaws.AccessDeniedError
			if !errors.As(err, &ad) || ad.Permission != st.permission {
				t.Fatalf("error %v, want an AccessDeniedError for %s", err, st.permission)
			}
			calls := srv.Calls()
			wantCode := "AccessDeniedException"
			switch {
			case strings.HasPrefix(st.permission, "ec2:"):
				wantCode = "UnauthorizedOperation"
			case strings.HasPrefix(st.permission, "autoscaling:"):
				wantCode = "AccessDenied"
			}
			if len(calls) != 1 || calls[0].ErrorCode != wantCode {
				t.Errorf("calls %+v, want one answered %s", calls, wantCode)
			}
		})
	}
}

// TestThrottlingOverTheWire: a throttled call is retried by the SDK and counted; one throttled
// at every attempt is a ThrottledError naming the permission.
func TestThrottlingOverTheWire(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		st   step
		op   string
		code string
	}{
		{steps[2], "DescribeSubnets", "RequestLimitExceeded"},
		{steps[4], "FilterLogEvents", "ThrottlingException"},
		{steps[6], "DescribeCluster", "ThrottlingException"},
		{stepNamed("ListNodegroups"), "ListNodegroups", "ThrottlingException"},
		{stepNamed("DescribeLaunchTemplateVersions"), "DescribeLaunchTemplateVersions", "RequestLimitExceeded"},
		{stepNamed("DescribeAutoScalingGroups"), "DescribeAutoScalingGroups", "Throttling"},
		{stepNamed("GetMetricData"), "GetMetricData", "Throttling"},
	} {
		t.Run(tc.op, func(t *testing.T) {
			srv := awsserver.Start(t, newCloud())
			c := load(t, srv)
			srv.FailNext(tc.op, tc.code, 1)
			if _, err := tc.st.run(ctx, c); err != nil {
				t.Fatalf("throttled once: %v", err)
			}
			if n := c.Throttles.Count(); n != 1 {
				t.Errorf("throttle count %d, want 1", n)
			}
			if n := srv.Count(tc.op); n != len(tc.st.ops)+1 {
				t.Errorf("%d requests, want %d", n, len(tc.st.ops)+1)
			}
			srv.FailNext(tc.op, tc.code, 3) // the standard retryer's attempts
			_, err := tc.st.run(ctx, c)
			var th *nkaws.ThrottledError
			if !errors.As(err, &th) || th.Permission != tc.st.permission {
				t.Errorf("always throttled: %v, want a ThrottledError for %s", err, tc.st.permission)
			}
		})
	}
}

func stepNamed(name string) step {
	i := slices.IndexFunc(steps, func(s step) bool { return s.name == name })
	return steps[i]
}

// TestRefusesWhatAWSRefuses: an unsigned request, and a parameter EC2 does not know.
func TestRefusesWhatAWSRefuses(t *testing.T) {
	srv := awsserver.Start(t, newCloud())
	resp, err := http.PostForm(srv.URL, url.Values{"Action": {"DescribeSubnets"}, "Version": {"2016-11-15"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned: HTTP %d", resp.StatusCode)
	}
	c := load(t, srv)
	_, err = c.EC2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{DryRun: awssdk.Bool(true)})
	if !strings.Contains(fmtErr(err), "DryRunOperation") {
		t.Errorf("DryRun: %v", err)
	}
	_, err = allclients.DescribeCluster(context.Background(), c.EKS, "nope")
	if !strings.Contains(fmtErr(err), "ResourceNotFoundException") {
		t.Errorf("unknown cluster: %v", err)
	}
	if ops := srv.Operations(); !slices.Equal(ops, []string{"ec2:DescribeSubnets", "ec2:DescribeSubnets", "eks:DescribeCluster"}) {
		t.Errorf("calls %v", ops)
	}
}

// same is reflect.DeepEqual, except that an empty slice or map equals nil (JSON services
// send "results": [] where the Cloud has nil) and times are compared as instants.
func same(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == reflect.TypeFor[time.Time]() && a.CanInterface() && b.CanInterface() {
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !same(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
