package eni

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Version is a VPC CNI release number (major.minor.patch). Parsing and ordering are
// apimachinery's (k8s.io/apimachinery/pkg/util/version, as doctor's Kubernetes version checks);
// the struct keeps the value comparable, so a zero Version can mean "not set".
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func (v Version) generic() *version.Version {
	return version.MajorMinor(uint(v.Major), uint(v.Minor)).WithPatch(uint(v.Patch))
}

// Less reports whether v is an earlier release than w.
func (v Version) Less(w Version) bool { return v.generic().LessThan(w.generic()) }

// ParseVersion reads "1.18.3", "v1.19.0-eksbuild.1" or "1.9". Unlike the calculator script, which
// compares the minor number alone against 9 once the major is 1, the comparison is numeric on the
// whole version, so 2.0 counts as newer than 1.9.
func ParseVersion(s string) (Version, error) {
	trimmed := strings.TrimPrefix(strings.TrimSpace(s), "V")
	v, err := version.ParseGeneric(trimmed)
	if err != nil || len(v.Components()) > 3 {
		return Version{}, fmt.Errorf("invalid VPC CNI version %q: want MAJOR.MINOR[.PATCH], for example 1.18.3", s)
	}
	return Version{Major: int(v.Major()), Minor: int(v.Minor()), Patch: int(v.Patch())}, nil
}

// VersionFromImage extracts the release from an aws-node container image such as
// "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1". It fails for
// images without a version tag (a digest only, "latest").
func VersionFromImage(image string) (Version, error) {
	tag, ok := ImageTag(image)
	if !ok {
		return Version{}, fmt.Errorf("image %q has no version tag", image)
	}
	return ParseVersion(tag)
}

// ImageTag returns the tag of a container image reference ("v1.19.2-eksbuild.1" of
// "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1@sha256:..."),
// ignoring a digest and a registry port; ok is false when the reference has no tag.
func ImageTag(image string) (tag string, ok bool) {
	ref := image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "", false
	}
	return ref[colon+1:], true
}
