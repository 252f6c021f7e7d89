package awsfake

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ nkaws.LaunchTemplatesAPI = (*Cloud)(nil)

// DescribeLaunchTemplateVersions implements LaunchTemplatesAPI for one launch template, named by
// LaunchTemplateId or LaunchTemplateName (not both), and Versions: numbers, $Latest and $Default
// (none: every version), in version order, paged by MaxResults (at most 200) and NextToken.
// Errors are EC2's: an unknown template is InvalidLaunchTemplateId.NotFound (by ID) or
// InvalidLaunchTemplateName.NotFoundException (by name), an unknown version number
// InvalidLaunchTemplateId.VersionNotFound.
func (c *Cloud) DescribeLaunchTemplateVersions(_ context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return answer(c, nkaws.PermDescribeLaunchTemplateVersions, in, c.describeLaunchTemplateVersions)
}

func (c *Cloud) describeLaunchTemplateVersions(in *ec2.DescribeLaunchTemplateVersionsInput) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	id, name := str(in.LaunchTemplateId), str(in.LaunchTemplateName)
	if (id == "") == (name == "") {
		return nil, apiError("InvalidParameterCombination", "specify either the launch template ID or the launch template name, not both")
	}
	if err := checkPageSize(in.MaxResults, 200, "InvalidParameterValue", "MaxResults"); err != nil {
		return nil, err
	}
	var all []ec2types.LaunchTemplateVersion
	for _, v := range c.LaunchTemplateVersions {
		if (id != "" && str(v.LaunchTemplateId) == id) || (name != "" && str(v.LaunchTemplateName) == name) {
			all = append(all, v)
		}
	}
	if len(all) == 0 {
		if id != "" {
			return nil, apiError("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
		return nil, apiError("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
	}
	match := all
	if len(in.Versions) > 0 {
		want := map[int64]bool{}
		var latest int64
		for _, v := range all {
			latest = max(latest, num(v.VersionNumber))
		}
		for _, w := range in.Versions {
			switch w {
			case "$Latest":
				want[latest] = true
			case "$Default":
				for _, v := range all {
					if v.DefaultVersion != nil && *v.DefaultVersion {
						want[num(v.VersionNumber)] = true
					}
				}
			default:
				n, err := strconv.ParseInt(w, 10, 64)
				if err != nil || n < 1 || n > latest {
					return nil, apiError("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for the launch template %s", w, id+name)
				}
				want[n] = true
			}
		}
		match = nil
		for _, v := range all {
			if want[num(v.VersionNumber)] {
				match = append(match, v)
			}
		}
	}
	p, err := pageOf(match, in.NextToken, c.pageSize(defaultPageSize, in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeLaunchTemplateVersionsOutput{LaunchTemplateVersions: p.items, NextToken: p.next}, nil
}

func num(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// UserData is user data as a launch template version holds it, base64 of the text, or of its
// gzip when compressed (cloud-init decompresses it on the node).
func UserData(text string, compressed bool) *string {
	data := []byte(text)
	if compressed {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(data)
		_ = zw.Close()
		data = b.Bytes()
	}
	s := base64.StdEncoding.EncodeToString(data)
	return &s
}

// MIMEPart is one part of a MIME multi-part user data document.
type MIMEPart struct {
	ContentType string
	Body        string
}

// MIMEUserData is a MIME multi-part user data document, the shape EKS managed node groups merge
// a launch template's user data into (boundary "//", as in the EKS user guide's examples).
func MIMEUserData(parts ...MIMEPart) string {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n")
	for _, p := range parts {
		b.WriteString("--//\nContent-Type: " + p.ContentType + "\n\n" + p.Body + "\n")
	}
	b.WriteString("--//--\n")
	return b.String()
}
