package doctor

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Sample is one series of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the Prometheus text exposition format, keeping only the series whose name
// starts with prefix. Comment and blank lines are skipped; a malformed series line is an error
// (an API server does not produce one, so it means the answer is not metrics at all).
func ParseMetrics(data []byte, prefix string) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, prefix) {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.Name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		j := 1
		for {
			for j < len(rest) && (rest[j] == ' ' || rest[j] == ',') {
				j++
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated labels in %q", line)
			}
			if rest[j] == '}' {
				j++
				break
			}
			eq := strings.IndexByte(rest[j:], '=')
			if eq < 0 || j+eq+1 >= len(rest) || rest[j+eq+1] != '"' {
				return s, fmt.Errorf("malformed label in %q", line)
			}
			key := strings.TrimSpace(rest[j : j+eq])
			j += eq + 2
			var val strings.Builder
			closed := false
			for j < len(rest) {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					switch rest[j+1] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j+1])
					}
					j += 2
					continue
				}
				if c == '"' {
					closed = true
					j++
					break
				}
				val.WriteByte(c)
				j++
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value in %q", line)
			}
			s.Labels[key] = val.String()
		}
		rest = rest[j:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value %q: %w", fields[0], err)
	}
	s.Value = v
	return s, nil
}

const rejectedMetric = "apiserver_flowcontrol_rejected_requests_total"

// CheckAPF reports the requests APF rejected, per priority level, from the API server's metrics.
// It returns the number of priority levels seen (the section's checked count).
func CheckAPF(samples []Sample) ([]findings.Finding, int) {
	levels := map[string]bool{}
	type agg struct {
		total   float64
		reasons map[string]float64
		flows   map[string]float64
	}
	rejected := map[string]*agg{}
	for _, s := range samples {
		pl := s.Labels["priority_level"]
		if pl == "" {
			continue
		}
		levels[pl] = true
		if s.Name != rejectedMetric || s.Value <= 0 {
			continue
		}
		a := rejected[pl]
		if a == nil {
			a = &agg{reasons: map[string]float64{}, flows: map[string]float64{}}
			rejected[pl] = a
		}
		a.total += s.Value
		a.reasons[s.Labels["reason"]] += s.Value
		a.flows[s.Labels["flow_schema"]] += s.Value
	}
	names := make([]string, 0, len(rejected))
	for pl := range rejected {
		names = append(names, pl)
	}
	sort.Strings(names)
	var out []findings.Finding
	for _, pl := range names {
		a := rejected[pl]
		out = append(out, RuleAPFRejected.New("prioritylevelconfiguration/"+pl,
			"%.0f requests rejected since the API server started (%s) from flow schemas %s",
			a.total, topCounts(a.reasons, 0), topCounts(a.flows, 5)))
	}
	return out, len(levels)
}

// topCounts formats "a 10, b 3" sorted by count, at most limit entries (0 = all).
func topCounts(m map[string]float64, limit int) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range m {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].v != list[j].v {
			return list[i].v > list[j].v
		}
		return list[i].k < list[j].k
	})
	var parts []string
	for i, e := range list {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-limit))
			break
		}
		k := e.k
		if k == "" {
			k = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", k, e.v))
	}
	return strings.Join(parts, ", ")
}
