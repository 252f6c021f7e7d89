// Package ipamdmetrics reads the figures doctor judges from one aws-node ipamd's /metrics answer
// (Prometheus text format), bounded in CPU and memory as well as in bytes.
//
// Whatever answers on a node's ipamd port (61678, hostNetwork) writes this text, so it is
// hostile input. A general parser is not: prometheus/common's text parser rebuilds its label
// map for every label, so one series with 20k labels costs minutes of CPU, and 2 MiB of distinct
// series costs tens of MB of families per node. This reader is linear in the answer and refuses,
// before any work grows with them:
//
//   - a line longer than MaxLineBytes;
//   - a series with more than MaxLabelsPerSeries labels;
//   - more than MaxSeries awscni_ series in one answer;
//   - a figure it reads that is not finite, negative, or beyond MaxValue (no ipamd counts that
//     far; such a value would otherwise overflow the sums and flip the measured cause);
//
// and it checks the context every few hundred lines. A series repeated in the answer is counted
// once; sums saturate. Only the awscni_ series are parsed: the Go runtime and process series
// beside them are skipped at the cost of finding their line's end.
//
// The metric names are ipamd's, declared in utils/prometheusmetrics/prometheusmetrics.go of
// amazon-vpc-cni-k8s (the same in v1.19.0 through v1.23.0) and set in pkg/ipamd/ipamd.go,
// pkg/ipamd/datastore/data_store.go and pkg/awsutils/awsutils.go:
//
//	awscni_total_ip_addresses      gauge   addresses in the node's pool (warm + assigned)
//	awscni_assigned_ip_addresses   gauge   addresses assigned to pods
//	awscni_ip_max                  gauge   the most addresses the instance can hold
//	awscni_eni_allocated           gauge   ENIs attached
//	awscni_eni_max                 gauge   the most ENIs, unmanaged ones excepted
//	awscni_no_available_ip_addresses counter pod address requests ipamd had no address for
//	awscni_aws_api_error_count{api,error} counter EC2/IMDS calls that failed, by API and error code
//	awscni_ipamd_error_count{fn}   counter ipamd's own failures, by function
package ipamdmetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The bounds of one answer. ipamd's own answer is tens of KiB: lines under 300 bytes, at most 4
// labels per series (api, error, status, quantile), a few hundred awscni_ series (one per ENI,
// per CIDR with prefix delegation, per API and outcome).
const (
	// MaxLineBytes bounds one line, comments included.
	MaxLineBytes = 4096
	// MaxLabelsPerSeries bounds the labels of one awscni_ series.
	MaxLabelsPerSeries = 16
	// MaxSeries bounds the awscni_ series of one answer, and so the series remembered to count a
	// repeated one once.
	MaxSeries = 4096
	// MaxValue is the largest figure accepted: no ipamd holds 10^12 addresses or counts 10^12
	// failures since it started.
	MaxValue = 1e12
	// MaxKeys bounds the distinct error codes and functions kept (the rest are summed under
	// "other"): the labels are written by whatever answers.
	MaxKeys = 16
	// Other is the key the codes and functions past MaxKeys are summed under.
	Other = "other"
	// maxKeyRunes clips an error code or function name kept, and a name in an error.
	maxKeyRunes = 64
	// checkEvery is how many lines are read between two looks at the context.
	checkEvery = 256
)

// The metric names read.
const (
	MetricTotalIPs    = "awscni_total_ip_addresses"
	MetricAssignedIPs = "awscni_assigned_ip_addresses"
	MetricMaxIPs      = "awscni_ip_max"
	MetricENIs        = "awscni_eni_allocated"
	MetricMaxENIs     = "awscni_eni_max"
	MetricNoAddress   = "awscni_no_available_ip_addresses"
	MetricAPIErrors   = "awscni_aws_api_error_count"
	MetricIPAMDErrors = "awscni_ipamd_error_count"
)

const prefix = "awscni_"

// Figures are one ipamd's figures.
type Figures struct {
	// HasPool is false when ipamd has not published its pool gauges (still starting).
	HasPool                       bool
	TotalIPs, AssignedIPs, MaxIPs int
	ENIs, MaxENIs                 int
	NoAddress                     int
	// EC2Errors counts awscni_aws_api_error_count by error code (summed over the APIs);
	// IPAMDErrors counts awscni_ipamd_error_count by function.
	EC2Errors, IPAMDErrors map[string]int
}

// ErrNotIPAMD is the error of an answer without any awscni_ series: ipamd always publishes its
// counters, from 0, so that answer is not ipamd's.
var ErrNotIPAMD = errors.New("the answer holds no awscni_ metrics: not ipamd's /metrics")

// Parse reads ipamd's figures from its /metrics answer. Series it does not know are skipped; a
// malformed awscni_ line, a bound passed or a refused value is an error naming the line; so is
// the context's end.
func Parse(ctx context.Context, raw []byte) (*Figures, error) {
	p := parser{
		f:    &Figures{EC2Errors: map[string]int{}, IPAMDErrors: map[string]int{}},
		seen: map[uint64]struct{}{},
		seed: maphash.MakeSeed(),
	}
	pool := 0
	for lineNo := 1; len(raw) > 0; lineNo++ {
		if lineNo%checkEvery == 0 {
			if err := context.Cause(ctx); err != nil {
				return nil, fmt.Errorf("reading ipamd's metrics stopped at line %d: %w", lineNo, err)
			}
		}
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) > MaxLineBytes {
			return nil, fmt.Errorf("line %d is longer than %d bytes", lineNo, MaxLineBytes)
		}
		line = bytes.TrimLeft(line, " \t")
		if !bytes.HasPrefix(line, []byte(prefix)) {
			continue // a comment, a blank line or a series not ipamd's own
		}
		s, err := p.series(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		p.count++
		if p.count > MaxSeries {
			return nil, fmt.Errorf("more than %d awscni_ series", MaxSeries)
		}
		bit, err := p.add(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		pool |= bit
	}
	if p.count == 0 {
		return nil, ErrNotIPAMD
	}
	p.f.HasPool = pool == 7
	return p.f, nil
}

type parser struct {
	f     *Figures
	count int
	// seen holds the read series' identities (name and sorted labels, hashed), so that a
	// repeated series counts once; at most MaxSeries.
	seen   map[uint64]struct{}
	seed   maphash.Seed
	labels []label // scratch, reused
}

type label struct{ name, value string }

type sample struct {
	name   string
	labels []label
	value  float64
}

// read says which metrics are read (the others are parsed for their syntax and counted).
func read(name string) bool {
	switch name {
	case MetricTotalIPs, MetricAssignedIPs, MetricMaxIPs, MetricENIs, MetricMaxENIs,
		MetricNoAddress, MetricAPIErrors, MetricIPAMDErrors:
		return true
	}
	return false
}

// add counts one series into the figures; the bit says which pool gauge it was.
func (p *parser) add(s sample) (int, error) {
	if !read(s.name) {
		return 0, nil
	}
	switch v := s.value; {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%s is %v: not a count", s.name, v)
	case v < 0:
		return 0, fmt.Errorf("%s is negative (%v): not a count", s.name, v)
	case v > MaxValue:
		return 0, fmt.Errorf("%s is %v, beyond any count ipamd keeps (%g)", s.name, v, float64(MaxValue))
	}
	if !p.first(s) {
		return 0, nil
	}
	v := int(s.value)
	f := p.f
	switch s.name {
	case MetricTotalIPs:
		f.TotalIPs = v
		return 1, nil
	case MetricAssignedIPs:
		f.AssignedIPs = v
		return 2, nil
	case MetricMaxIPs:
		f.MaxIPs = v
		return 4, nil
	case MetricENIs:
		f.ENIs = v
	case MetricMaxENIs:
		f.MaxENIs = v
	case MetricNoAddress:
		f.NoAddress = SaturatingAdd(f.NoAddress, v)
	case MetricAPIErrors:
		addKey(f.EC2Errors, labelValue(s.labels, "error"), v)
	case MetricIPAMDErrors:
		addKey(f.IPAMDErrors, labelValue(s.labels, "fn"), v)
	}
	return 0, nil
}

// first says whether s is the first of its series in the answer (its name and labels, in any
// order).
func (p *parser) first(s sample) bool {
	slices.SortFunc(s.labels, func(a, b label) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(s.name)
	for _, l := range s.labels {
		h.WriteByte(0)
		h.WriteString(l.name)
		h.WriteByte(0)
		h.WriteString(l.value)
	}
	k := h.Sum64()
	if _, ok := p.seen[k]; ok {
		return false
	}
	p.seen[k] = struct{}{}
	return true
}

func labelValue(ls []label, name string) string {
	for _, l := range ls {
		if l.name == name {
			return l.value
		}
	}
	return ""
}

// addKey adds v under key, or under Other once MaxKeys keys are kept.
func addKey(m map[string]int, key string, v int) {
	if v <= 0 {
		return
	}
	key = textsafe.ClipRaw(key, maxKeyRunes)
	if _, ok := m[key]; !ok && len(m) >= MaxKeys {
		key = Other
	}
	m[key] = SaturatingAdd(m[key], v)
}

// SaturatingAdd is a+b for non-negative a and b, math.MaxInt when that overflows.
func SaturatingAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// series parses one line of the text format's sample syntax:
//
//	name [{label="value",...}] value [timestamp]
//
// label values with the escapes \\, \" and \n. The line is at most MaxLineBytes, and each step
// moves forward, so this is linear in the line.
func (p *parser) series(line []byte) (sample, error) {
	i := 0
	for i < len(line) && isNameByte(line[i], i > 0) {
		i++
	}
	s := sample{name: string(line[:i])}
	blank := i
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i < len(line) && line[i] == '{' {
		n, err := p.parseLabels(s.name, line[i+1:])
		if err != nil {
			return s, err
		}
		i += 1 + n
		s.labels = p.labels
		blank = i
	}
	rest := line[i:]
	if len(rest) == 0 || blank == i && rest[0] != ' ' && rest[0] != '\t' {
		return s, fmt.Errorf("%s: a malformed series (want name{labels} value)", clipName(s.name))
	}
	fields := bytes.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("%s: want a value and at most a timestamp after the series", clipName(s.name))
	}
	v, err := strconv.ParseFloat(string(fields[0]), 64)
	if err != nil {
		return s, fmt.Errorf("%s: the value is not a number", clipName(s.name))
	}
	if len(fields) == 2 {
		if _, err := strconv.ParseInt(string(fields[1]), 10, 64); err != nil {
			return s, fmt.Errorf("%s: the timestamp is not an integer", clipName(s.name))
		}
	}
	s.value = v
	return s, nil
}

// parseLabels parses the labels after '{' up to and including '}' into p.labels, and returns the
// bytes read.
func (p *parser) parseLabels(name string, b []byte) (int, error) {
	p.labels = p.labels[:0]
	i := 0
	skip := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
	}
	malformed := func(what string) (int, error) {
		return 0, fmt.Errorf("%s: malformed labels (%s)", clipName(name), what)
	}
	for {
		skip()
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		start := i
		for i < len(b) && isLabelByte(b[i], i > start) {
			i++
		}
		if i == start {
			return malformed("a label name expected")
		}
		ln := string(b[start:i])
		skip()
		if i >= len(b) || b[i] != '=' {
			return malformed("'=' expected")
		}
		i++
		skip()
		if i >= len(b) || b[i] != '"' {
			return malformed("a quoted value expected")
		}
		i++
		var val []byte
		for {
			if i >= len(b) {
				return malformed("an unterminated value")
			}
			c := b[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' {
				if i+1 >= len(b) {
					return malformed("an unterminated escape")
				}
				switch b[i+1] {
				case '\\', '"':
					c = b[i+1]
				case 'n':
					c = '\n'
				default:
					return malformed("an unknown escape")
				}
				i++
			}
			val = append(val, c)
			i++
		}
		if len(p.labels) == MaxLabelsPerSeries {
			return 0, fmt.Errorf("%s: more than %d labels on one series", clipName(name), MaxLabelsPerSeries)
		}
		for _, l := range p.labels {
			if l.name == ln {
				return malformed("label " + clipName(ln) + " repeated")
			}
		}
		p.labels = append(p.labels, label{ln, string(val)})
		skip()
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return malformed("',' or '}' expected")
		}
	}
}

func isNameByte(c byte, notFirst bool) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || notFirst && '0' <= c && c <= '9'
}

func isLabelByte(c byte, notFirst bool) bool {
	return c != ':' && isNameByte(c, notFirst)
}

// clipName clips a metric or label name (name bytes only, so ASCII) for an error.
func clipName(n string) string {
	if len(n) > maxKeyRunes {
		return n[:maxKeyRunes] + "…"
	}
	return n
}
