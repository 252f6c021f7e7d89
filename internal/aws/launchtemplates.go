package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// LaunchTemplatesAPI is the part of EC2 that reads launch template versions (their user data
// above all). *ec2.Client satisfies it.
type LaunchTemplatesAPI interface {
	DescribeLaunchTemplateVersions(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// DescribeLaunchTemplateVersions returns the versions of one launch template that in asks for
// (numbers, $Latest, $Default), from every page. EC2 returns UserData base64-encoded, as it was
// given.
func DescribeLaunchTemplateVersions(ctx context.Context, api LaunchTemplatesAPI, in *ec2.DescribeLaunchTemplateVersionsInput) ([]ec2types.LaunchTemplateVersion, error) {
	p := ec2.NewDescribeLaunchTemplateVersionsPaginator(api, in)
	return AllPages(ctx, PermDescribeLaunchTemplateVersions, p.HasMorePages, p.NextPage, func(page *ec2.DescribeLaunchTemplateVersionsOutput) []ec2types.LaunchTemplateVersion {
		return page.LaunchTemplateVersions
	})
}
