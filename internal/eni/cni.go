package eni

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Environment variables of the aws-node container that nodekeeper reads. The names and the way
// each is parsed follow the VPC CNI source (cmd/aws-vpc-cni and pkg/ipamd).
const (
	EnvCustomNetworking = "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"
	EnvPrefixDelegation = "ENABLE_PREFIX_DELEGATION"
	EnvMaxENI           = "MAX_ENI"
	EnvWarmENITarget    = "WARM_ENI_TARGET"
	EnvWarmIPTarget     = "WARM_IP_TARGET"
	EnvMinimumIPTarget  = "MINIMUM_IP_TARGET"
	EnvWarmPrefixTarget = "WARM_PREFIX_TARGET"
	EnvIPCooldownPeriod = "IP_COOLDOWN_PERIOD"
	EnvClusterEndpoint  = "CLUSTER_ENDPOINT"
	EnvEnableIPv6       = "ENABLE_IPv6"
	EnvPodENI           = "ENABLE_POD_ENI"
)

// DefaultWarmENITarget and DefaultIPCooldownPeriod are the CNI's defaults when the variable is unset.
const (
	DefaultWarmENITarget    = 1
	DefaultIPCooldownPeriod = 30
)

// IntSetting is one integer variable as the CNI sees it.
type IntSetting struct {
	// Set: the variable is present in the environment (even empty).
	Set bool `json:"set"`
	// Raw is the text as written.
	Raw string `json:"raw,omitempty"`
	// Value is the parsed number; meaningful when Valid.
	Value int `json:"value"`
	// Valid: Set and an integer.
	Valid bool `json:"valid"`
}

// Positive reports a set, valid value above zero: how the CNI decides that a target is "configured".
func (s IntSetting) Positive() bool { return s.Valid && s.Value > 0 }

// Settings are the VPC CNI settings that change IP capacity or allocation behaviour.
type Settings struct {
	CustomNetworking bool `json:"customNetworking"`
	PrefixDelegation bool `json:"prefixDelegation"`
	IPv6             bool `json:"ipv6"`
	// PodENI: security groups for pods; on trunking-compatible types one ENI becomes the trunk.
	PodENI           bool       `json:"podENI"`
	MaxENI           IntSetting `json:"maxENI"`
	WarmENITarget    IntSetting `json:"warmENITarget"`
	WarmIPTarget     IntSetting `json:"warmIPTarget"`
	MinimumIPTarget  IntSetting `json:"minimumIPTarget"`
	WarmPrefixTarget IntSetting `json:"warmPrefixTarget"`
	IPCooldownPeriod IntSetting `json:"ipCooldownPeriod"`
	// ClusterEndpointSet: CLUSTER_ENDPOINT is present and not empty.
	ClusterEndpointSet bool `json:"clusterEndpointSet"`
	// InvalidBools lists boolean variables whose value strconv.ParseBool rejects; the CNI then uses
	// the default (false) and logs an error.
	InvalidBools []string `json:"invalidBools,omitempty"`
}

// EffectiveMaxENI is the MAX_ENI the CNI applies: values below 1 or unparsable are ignored (0).
func (s Settings) EffectiveMaxENI() int {
	if s.MaxENI.Valid && s.MaxENI.Value >= 1 {
		return s.MaxENI.Value
	}
	return 0
}

// ParseSettings reads the CNI settings from an aws-node environment (names to values; an absent
// name is unset).
func ParseSettings(env map[string]string) Settings {
	var s Settings
	s.CustomNetworking = s.boolEnv(env, EnvCustomNetworking)
	s.PrefixDelegation = s.boolEnv(env, EnvPrefixDelegation)
	s.IPv6 = s.boolEnv(env, EnvEnableIPv6)
	s.PodENI = s.boolEnv(env, EnvPodENI)
	s.MaxENI = intEnv(env, EnvMaxENI)
	s.WarmENITarget = intEnv(env, EnvWarmENITarget)
	s.WarmIPTarget = intEnv(env, EnvWarmIPTarget)
	s.MinimumIPTarget = intEnv(env, EnvMinimumIPTarget)
	s.WarmPrefixTarget = intEnv(env, EnvWarmPrefixTarget)
	s.IPCooldownPeriod = intEnv(env, EnvIPCooldownPeriod)
	s.ClusterEndpointSet = strings.TrimSpace(env[EnvClusterEndpoint]) != ""
	sort.Strings(s.InvalidBools)
	return s
}

func (s *Settings) boolEnv(env map[string]string, name string) bool {
	v, ok := env[name]
	if !ok || v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		s.InvalidBools = append(s.InvalidBools, fmt.Sprintf("%s=%q", name, v))
		return false
	}
	return b
}

func intEnv(env map[string]string, name string) IntSetting {
	v, ok := env[name]
	if !ok {
		return IntSetting{}
	}
	n, err := strconv.Atoi(v) // no trimming: the CNI rejects " 5" too
	return IntSetting{Set: true, Raw: v, Value: n, Valid: err == nil}
}
