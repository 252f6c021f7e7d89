package eni

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a VPC CNI release number (major.minor.patch).
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less reports whether v is an earlier release than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// ParseVersion reads "1.18.3", "v1.19.0-eksbuild.1" or "1.9". Unlike the calculator script, which
// compares the minor number alone against 9 once the major is 1, the comparison is numeric on the
// whole version, so 2.0 counts as newer than 1.9.
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("invalid VPC CNI version %q: want MAJOR.MINOR[.PATCH], for example 1.18.3", orig)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" {
			return Version{}, fmt.Errorf("invalid VPC CNI version %q: %q is not a number", orig, p)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// VersionFromImage extracts the release from an aws-node container image such as
// "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1". It fails for
// images without a version tag (a digest only, "latest").
func VersionFromImage(image string) (Version, error) {
	ref := image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return Version{}, fmt.Errorf("image %q has no version tag", image)
	}
	return ParseVersion(ref[colon+1:])
}
