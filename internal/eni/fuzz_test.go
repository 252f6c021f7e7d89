package eni

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// envFromBytes reads an aws-node environment the way it is dumped: NAME=value entries separated by
// newlines or NULs (/proc/PID/environ); an entry without "=" is a name with an empty value.
func envFromBytes(data []byte) map[string]string {
	env := map[string]string{}
	for _, entry := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == 0 }) {
		name, value, _ := strings.Cut(entry, "=")
		env[name] = value
	}
	return env
}

// FuzzParseSettings: whatever the aws-node environment holds, ParseSettings does not panic, keeps
// every integer variable's text as written, parses it exactly as the CNI does (strconv.Atoi, no
// trimming), reports every unparsable boolean, and never yields a negative MAX_ENI.
func FuzzParseSettings(f *testing.F) {
	for _, seed := range []string{
		"",
		"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true\nENABLE_PREFIX_DELEGATION=true\nWARM_PREFIX_TARGET=1\nCLUSTER_ENDPOINT=https://ABC.gr7.us-west-2.eks.amazonaws.com",
		"WARM_ENI_TARGET=0\nWARM_IP_TARGET=5\nMINIMUM_IP_TARGET=10\nMAX_ENI=-3",
		"ENABLE_POD_ENI=yes\nENABLE_IPv6=1\x00MAX_ENI= 5\x00IP_COOLDOWN_PERIOD=99999999999999999999",
		"WARM_IP_TARGET\nMAX_ENI=\xff\xfe\nAWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=TRUE\x1b[2J",
	} {
		f.Add([]byte(seed))
	}
	ints := []string{EnvMaxENI, EnvWarmENITarget, EnvWarmIPTarget, EnvMinimumIPTarget, EnvWarmPrefixTarget, EnvIPCooldownPeriod}
	bools := []string{EnvCustomNetworking, EnvPrefixDelegation, EnvEnableIPv6, EnvPodENI}
	f.Fuzz(func(t *testing.T, data []byte) {
		env := envFromBytes(data)
		s := ParseSettings(env)
		got := map[string]IntSetting{EnvMaxENI: s.MaxENI, EnvWarmENITarget: s.WarmENITarget, EnvWarmIPTarget: s.WarmIPTarget,
			EnvMinimumIPTarget: s.MinimumIPTarget, EnvWarmPrefixTarget: s.WarmPrefixTarget, EnvIPCooldownPeriod: s.IPCooldownPeriod}
		for _, name := range ints {
			v, ok := env[name]
			is := got[name]
			if is.Set != ok || is.Raw != v {
				t.Fatalf("%s: %+v from present=%v %q", name, is, ok, v)
			}
			n, err := strconv.Atoi(v)
			if ok && (is.Valid != (err == nil) || (is.Valid && is.Value != n)) {
				t.Fatalf("%s=%q parsed as %+v, strconv says %d, %v", name, v, is, n, err)
			}
		}
		if s.EffectiveMaxENI() < 0 {
			t.Fatalf("EffectiveMaxENI = %d", s.EffectiveMaxENI())
		}
		if !sort.StringsAreSorted(s.InvalidBools) {
			t.Fatalf("InvalidBools not sorted: %q", s.InvalidBools)
		}
		invalid := 0
		for _, name := range bools {
			if v, ok := env[name]; ok && v != "" {
				if _, err := strconv.ParseBool(v); err != nil {
					invalid++
				}
			}
		}
		if invalid != len(s.InvalidBools) {
			t.Fatalf("%d invalid booleans, InvalidBools = %q", invalid, s.InvalidBools)
		}
	})
}
