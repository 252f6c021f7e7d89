package kubeprint

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/client-go/util/jsonpath"
)

// sortKey is the value --sort-by found on one object.
type sortKey struct {
	present bool
	number  float64
	isNum   bool
	text    string
	when    time.Time
	isTime  bool
}

// SortBy orders n objects by the JSONPath expr evaluated on each (get(i) returns object i as the
// JSON value a JSONPath walks; swap exchanges two). Numbers compare as numbers, RFC 3339 times as
// times, everything else as text; objects without the field come first, as in kubectl. The sort
// is stable, so equal keys keep the order they came in.
func SortBy(expr string, n int, get func(i int) (any, error), swap func(i, j int)) error {
	if expr == "" || n < 2 {
		return nil
	}
	jp, err := parseJSONPath("--sort-by", expr)
	if err != nil {
		return err
	}
	jp.AllowMissingKeys(true)
	keys := make([]sortKey, n)
	for i := range keys {
		v, err := get(i)
		if err != nil {
			return err
		}
		if keys[i], err = keyOf(jp, v); err != nil {
			return fmt.Errorf("--sort-by %q: %w", expr, err)
		}
	}
	sort.Stable(&sorter{keys: keys, swap: swap})
	return nil
}

func keyOf(jp *jsonpath.JSONPath, data any) (sortKey, error) {
	results, err := jp.FindResults(data)
	if err != nil {
		return sortKey{}, err
	}
	for _, set := range results {
		for _, v := range set {
			if !v.IsValid() || !v.CanInterface() || v.Interface() == nil {
				continue
			}
			switch x := v.Interface().(type) {
			case float64:
				return sortKey{present: true, number: x, isNum: true}, nil
			case int64:
				return sortKey{present: true, number: float64(x), isNum: true}, nil
			case string:
				if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
					return sortKey{present: true, when: t, isTime: true, text: x}, nil
				}
				return sortKey{present: true, text: x}, nil
			default:
				return sortKey{present: true, text: fmt.Sprint(x)}, nil
			}
		}
	}
	return sortKey{}, nil
}

type sorter struct {
	keys []sortKey
	swap func(i, j int)
}

func (s *sorter) Len() int { return len(s.keys) }
func (s *sorter) Swap(i, j int) {
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	s.swap(i, j)
}
func (s *sorter) Less(i, j int) bool {
	a, b := &s.keys[i], &s.keys[j]
	switch {
	case a.present != b.present:
		return !a.present
	case a.isNum && b.isNum:
		return a.number < b.number
	case a.isTime && b.isTime:
		return a.when.Before(b.when)
	}
	return a.text < b.text
}
