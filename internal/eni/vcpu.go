package eni

import (
	"strconv"
	"strings"
)

// VCPUSourceEstimate is the VCPUSource of an EstimateVCPUs result.
const VCPUSourceEstimate = "estimated from the instance size name"

// EstimateVCPUs guesses an instance type's vCPU count from its size name, because no maintained Go
// package carries vCPU counts (the calculator asks EC2's DescribeInstanceTypes). Only the ceiling
// needs the number, and only whether it is above 30, so the estimate is good enough there and is
// always labelled as one; callers prefer a real count (a Node's cpu capacity, --vcpus).
//
// Rules: large = 2, xlarge = 4, NxLarge = 4N, metal-Nxl = 4N, nano/micro/small/medium = 2 (an upper
// bound), metal = the largest virtualised size of the same family. It reports false for names it
// cannot estimate and for families whose sizes do not follow the rule (hpc*, hs1).
func EstimateVCPUs(name string) (int, bool) {
	family, size, ok := strings.Cut(name, ".")
	if !ok || family == "" || size == "" {
		return 0, false
	}
	if strings.HasPrefix(family, "hpc") || family == "hs1" {
		return 0, false
	}
	if size == "metal" {
		best := 0
		for _, t := range Types() {
			f, s, _ := strings.Cut(t, ".")
			if f != family || strings.HasPrefix(s, "metal") {
				continue
			}
			if n, ok := sizeVCPUs(s); ok && n > best {
				best = n
			}
		}
		return best, best > 0
	}
	return sizeVCPUs(size)
}

func sizeVCPUs(size string) (int, bool) {
	switch size {
	case "nano", "micro", "small", "medium", "large":
		return 2, true
	case "xlarge":
		return 4, true
	}
	if n, ok := strings.CutPrefix(size, "metal-"); ok {
		if v, err := strconv.Atoi(strings.TrimSuffix(n, "xl")); err == nil && v > 0 && strings.HasSuffix(n, "xl") {
			return 4 * v, true
		}
		return 0, false
	}
	if n, ok := strings.CutSuffix(size, "xlarge"); ok {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return 4 * v, true
		}
	}
	return 0, false
}
