package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// doctor --aws reads the launch template version each Node was launched from, and its user data,
// so that what bundle --user-data finds on one node (NK631-NK635, max pods above the addresses)
// is found for the whole fleet, once per template version with the number of Nodes it made.
//
// How a Node leads to its template: EC2 tags every instance launched from a launch template with
// aws:ec2launchtemplate:id and aws:ec2launchtemplate:version (managed node groups, self-managed
// Auto Scaling groups and Karpenter all launch from one), and the Nodes' instances are read
// already (ec2.go). The groups are read too, for the version they launch from now: EKS managed
// node groups (their launchTemplate) and the Auto Scaling groups of the instances' tag
// aws:autoscaling:groupName; Karpenter's EC2NodeClass (label karpenter.k8s.aws/ec2nodeclass)
// makes its templates itself, so its instances' tags are the only source.
//
// A managed node group does not launch from the template it is given: "The Amazon EKS API
// creates this launch template either by copying one you provide or by creating one
// automatically with default values in your account" (Amazon EKS User Guide, "Customize managed
// nodes with launch templates", https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html).
// Its instances' aws:ec2launchtemplate:* tags name that copy, while DescribeNodegroup names the
// user's template. The user knows only their own, so a Node of a managed node group whose
// instance names another template than its group's is counted under its group's (user's)
// version, the copy named beside it, and the copy is not judged on its own: one finding, under
// the template the user edits.

// Instance tags and Node labels that lead to a launch template.
const (
	TagLaunchTemplateID      = "aws:ec2launchtemplate:id"
	TagLaunchTemplateVersion = "aws:ec2launchtemplate:version"
	TagAutoScalingGroup      = "aws:autoscaling:groupName"
	LabelEC2NodeClass        = "karpenter.k8s.aws/ec2nodeclass"
)

// sectionBootstrap is the launch templates' section; it is in the report with --aws.
var sectionBootstrap = findings.SectionSpec{Name: bootstrap.Section, Title: "Launch template user data (once per version in use)"}

// TemplateVersion is one version of a launch template that Nodes were launched from or a group
// launches from now.
type TemplateVersion struct {
	ID      string
	Version int64
	// Users are the groups that launch from it now or launched its Nodes ("managed node group
	// ng-1", "Auto Scaling group asg-1", "EC2NodeClass default"), sorted.
	Users []string
	// Nodes launched from it, by name, sorted.
	Nodes []string
	// Copies are the versions of EKS's copies of it that the Nodes of its managed node groups
	// were launched from ("lt-0eks version 3"), sorted; empty for a template launched as it is.
	Copies []string
	// Data is the version as EC2 described it; nil with Err when it could not be read (a
	// template deleted since).
	Data *ec2types.ResponseLaunchTemplateData
	Err  string
}

// Name is how findings name the version: "lt-0abc version 7".
func (v TemplateVersion) Name() string { return fmt.Sprintf("%s version %d", v.ID, v.Version) }

// templateRef is a launch template version as a group or an instance names it; version may be
// $Latest or $Default for a group.
type templateRef struct{ id, version string }

// templateUse gathers, while reading, who uses which template version.
type templateUse struct {
	users map[templateRef]map[string]bool
	nodes map[templateRef][]string
	// copies are, by the user's template version, the EKS copies its Nodes' instances name.
	copies map[templateRef]map[string]bool
}

// addCopy records that a Node counted under ref (its managed node group's template) was launched
// from EKS's copy of it.
func (u *templateUse) addCopy(ref, copied templateRef) {
	if u.copies[ref] == nil {
		u.copies[ref] = map[string]bool{}
	}
	u.copies[ref][copied.id+" version "+copied.version] = true
}

func (u *templateUse) add(ref templateRef, user, node string) {
	if _, err := strconv.ParseInt(ref.version, 10, 64); ref.id == "" || (err != nil && ref.version != "$Latest" && ref.version != "$Default") {
		return // no template, or a version EC2 would refuse to look up (a tag edited by hand)
	}
	if u.users[ref] == nil {
		u.users[ref] = map[string]bool{}
	}
	if user != "" {
		u.users[ref][user] = true
	}
	if node != "" {
		u.nodes[ref] = append(u.nodes[ref], node)
	}
}

// launchTemplates reads the managed node groups, the Auto Scaling groups the Nodes' instances
// belong to, and every launch template version in use. AccessDenied leaves the fact missing with
// the permission named; other AWS errors fail the run.
func (g *gatherer) launchTemplates(ctx context.Context) error {
	o := g.aws()
	use := &templateUse{users: map[templateRef]map[string]bool{}, nodes: map[templateRef][]string{}, copies: map[templateRef]map[string]bool{}}
	denied := func(err error) bool {
		if nkaws.IsAccessDenied(err) {
			g.f.miss(FactLaunchTemplates, "launchtemplates", err.Error())
			return true
		}
		return false
	}
	groupTemplate := map[string]templateRef{} // managed node group → template
	if o.Nodegroups != nil {
		names, err := o.Nodegroups.NodegroupNames(ctx, o.Cluster)
		if denied(err) {
			return nil
		}
		if apiErrorCode(err) == "ResourceNotFoundException" {
			// Not an EKS cluster (self-managed Kubernetes on EC2 with the cluster tag): no
			// managed node groups, and the Nodes' instances still name their templates.
			names, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("EKS: %w", err)
		}
		for _, name := range names {
			id, version, ok, err := o.Nodegroups.NodegroupLaunchTemplate(ctx, o.Cluster, name)
			if denied(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("EKS: %w", err)
			}
			if ok {
				ref := templateRef{id, version}
				groupTemplate[name] = ref
				use.add(ref, "managed node group "+name, "")
			}
		}
	}
	asgNodes := map[string]bool{}
	for i := range g.f.Nodes {
		n := &g.f.Nodes[i]
		inst, ok := g.f.EC2.ByID[instances.InstanceIDFromProviderID(n.Spec.ProviderID)]
		ref := templateRef{instances.TagValue(inst.Tags, TagLaunchTemplateID), instances.TagValue(inst.Tags, TagLaunchTemplateVersion)}
		user := ""
		switch ng, nc, asg := n.Labels[rules.LabelEKSNodegroup], n.Labels[LabelEC2NodeClass], instances.TagValue(inst.Tags, TagAutoScalingGroup); {
		case ng != "":
			user = "managed node group " + ng
			group, given := groupTemplate[ng]
			switch {
			case !ok || ref.id == "":
				ref = group // the instance is unknown: the group's template
			case given && ref.id != group.id:
				// EKS's copy of the group's template: counted under the user's (see the top).
				use.addCopy(group, ref)
				ref = group
			}
		case nc != "":
			user = "EC2NodeClass " + nc
		case n.Labels[rules.LabelKarpenterNodePool] != "": // Karpenter before the EC2NodeClass label
			user = "Karpenter NodePool " + n.Labels[rules.LabelKarpenterNodePool]
		case asg != "":
			user = "Auto Scaling group " + asg
			asgNodes[asg] = true
		}
		use.add(ref, user, n.Name)
	}
	if o.AutoScaling != nil && len(asgNodes) > 0 {
		names := make([]string, 0, len(asgNodes))
		for n := range asgNodes {
			names = append(names, n)
		}
		sort.Strings(names)
		groups, err := nkaws.DescribeAutoScalingGroups(ctx, o.AutoScaling, names)
		if denied(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Auto Scaling: %w", err)
		}
		for _, grp := range groups {
			if spec := asgTemplate(grp); spec != nil {
				use.add(templateRef{strDeref(spec.LaunchTemplateId), strDeref(spec.Version)}, "Auto Scaling group "+strDeref(grp.AutoScalingGroupName), "")
			}
		}
	}
	versions, err := readTemplateVersions(ctx, o.LaunchTemplates, use)
	if denied(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("EC2: %w", err)
	}
	g.f.LaunchTemplates = versions
	return nil
}

// asgTemplate is the launch template an Auto Scaling group launches from (of its mixed
// instances policy when it has one), by ID; nil for a launch configuration or a template by name.
func asgTemplate(g asgtypes.AutoScalingGroup) *asgtypes.LaunchTemplateSpecification {
	spec := g.LaunchTemplate
	if p := g.MixedInstancesPolicy; p != nil && p.LaunchTemplate != nil && p.LaunchTemplate.LaunchTemplateSpecification != nil {
		spec = p.LaunchTemplate.LaunchTemplateSpecification
	}
	if spec == nil || spec.LaunchTemplateId == nil {
		return nil
	}
	out := *spec // the answer's own value stays as AWS gave it
	if out.Version == nil {
		out.Version = strp("$Default") // what Auto Scaling launches when no version is given
	}
	return &out
}

// readTemplateVersions describes the versions in use, one call per template for the numbered
// versions and one per alias ($Latest, $Default: the answer does not say which alias a version
// answered), and merges the users of an alias into the version it stands for. A template or
// version EC2 no longer has is kept with its error: its Nodes still run what it held.
func readTemplateVersions(ctx context.Context, api nkaws.LaunchTemplatesAPI, use *templateUse) ([]TemplateVersion, error) {
	asks := map[string][]string{} // template → versions to ask for together
	for ref := range use.users {
		if strings.HasPrefix(ref.version, "$") {
			continue
		}
		asks[ref.id] = append(asks[ref.id], ref.version)
	}
	type key struct {
		id string
		v  int64
	}
	out := map[key]*TemplateVersion{}
	get := func(id string, v int64) *TemplateVersion {
		k := key{id, v}
		if out[k] == nil {
			out[k] = &TemplateVersion{ID: id, Version: v}
		}
		return out[k]
	}
	describe := func(id string, versions []string) ([]ec2types.LaunchTemplateVersion, string, error) {
		sort.Strings(versions)
		vs, err := nkaws.DescribeLaunchTemplateVersions(ctx, api, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: &id, Versions: versions})
		if nkaws.IsAccessDenied(err) {
			return nil, "", err
		}
		if err != nil && isNotFound(err) {
			return nil, err.Error(), nil
		}
		return vs, "", err
	}
	for id, versions := range asks {
		vs, missing, err := describe(id, versions)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			get(id, num64(v.VersionNumber)).Data = v.LaunchTemplateData
		}
		if missing == "" {
			continue
		}
		// EC2 fails the whole call for one version it no longer has: ask for each alone.
		for _, s := range versions {
			n, _ := strconv.ParseInt(s, 10, 64) // numbers only (templateUse.add)
			one, missing := vs, missing
			if len(versions) > 1 {
				if one, missing, err = describe(id, []string{s}); err != nil {
					return nil, err
				}
			}
			if len(one) == 1 {
				get(id, n).Data = one[0].LaunchTemplateData
			} else {
				get(id, n).Err = missing
			}
		}
	}
	alias := map[templateRef]int64{}
	for ref := range use.users {
		if !strings.HasPrefix(ref.version, "$") {
			continue
		}
		vs, missing, err := describe(ref.id, []string{ref.version})
		if err != nil {
			return nil, err
		}
		if missing != "" || len(vs) != 1 {
			continue // a group whose template is gone launches nothing: no Node runs it
		}
		n := num64(vs[0].VersionNumber)
		alias[ref] = n
		get(ref.id, n).Data = vs[0].LaunchTemplateData
	}
	for ref, users := range use.users {
		v, err := strconv.ParseInt(ref.version, 10, 64)
		if n, ok := alias[ref]; ok {
			v, err = n, nil
		}
		if err != nil {
			continue
		}
		tv := get(ref.id, v)
		for u := range users {
			tv.Users = append(tv.Users, u)
		}
		tv.Nodes = append(tv.Nodes, use.nodes[ref]...)
		for c := range use.copies[ref] {
			tv.Copies = append(tv.Copies, c)
		}
	}
	list := make([]TemplateVersion, 0, len(out))
	for _, tv := range out {
		sort.Strings(tv.Users)
		tv.Users = compactStrings(tv.Users)
		sort.Strings(tv.Nodes)
		sort.Strings(tv.Copies)
		tv.Copies = compactStrings(tv.Copies)
		list = append(list, *tv)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].ID != list[j].ID {
			return list[i].ID < list[j].ID
		}
		return list[i].Version < list[j].Version
	})
	return list, nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func num64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// apiErrorCode is the AWS error code of err, or "".
func apiErrorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// isNotFound says EC2 no longer has the template or version asked for.
func isNotFound(err error) bool {
	switch apiErrorCode(err) {
	case "InvalidLaunchTemplateId.NotFound", "InvalidLaunchTemplateId.VersionNotFound", "InvalidLaunchTemplateId.Malformed",
		"InvalidLaunchTemplateName.NotFoundException":
		return true
	}
	return false
}
