package gc

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
)

// Selection narrows which leaked leases a run deletes, for operators who want a canary first:
// only names matching --name-regexp, and at most --limit of them, oldest activity first. A
// selection only ever removes leases from what gc deletes; it never adds one that is not leaked.
type Selection struct {
	// NameRegexp is --name-regexp: a Go regular expression that must match the WHOLE lease name
	// (it is anchored: "ip-10-0-1-.*" never selects ip-10-0-11-…). Empty selects every name.
	NameRegexp string
	// Limit is --limit: delete at most this many leases (0: no limit). The leases chosen are the
	// ones idle longest, the same N on every run against the same cluster state.
	Limit int

	re *regexp.Regexp
}

// AddFlags registers --name-regexp and --limit.
func (s *Selection) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.NameRegexp, "name-regexp", s.NameRegexp, "delete only leaked leases whose whole name matches this regular expression (anchored: 'ip-10-0-1-.*' does not match ip-10-0-11-…)")
	fs.IntVar(&s.Limit, "limit", s.Limit, "delete at most this many leaked leases, those idle longest first (a canary run); 0: no limit")
}

// Validate compiles the expression and checks the limit.
func (s *Selection) Validate() error {
	if s.Limit < 0 {
		return fmt.Errorf("--limit must not be negative, got %d", s.Limit)
	}
	if s.NameRegexp == "" {
		s.re = nil
		return nil
	}
	re, err := regexp.Compile(`^(?:` + s.NameRegexp + `)$`)
	if err != nil {
		return fmt.Errorf("--name-regexp %q: %w", s.NameRegexp, err)
	}
	s.re = re
	return nil
}

func (s *Selection) matches(name string) bool { return s.re == nil || s.re.MatchString(name) }

// Left reasons for leaked leases a selection keeps.
const (
	LeftNotSelected = "not-selected" // the name does not match --name-regexp
	LeftOverLimit   = "over-limit"   // beyond --limit
)

// Select applies s to the plan: the leases gc deletes become the leaked ones s selects, oldest
// first, at most s.Limit; the others are counted in Selected/NotSelected/OverLimit. Select is
// called once, after List and before Collect.
func (p *Plan) Select(s Selection) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if p.selected {
		return errors.New("gc: the plan's selection is already applied")
	}
	p.selected, p.Selection = true, s
	var keep []*coordinationv1.Lease
	for _, l := range p.leaked { // oldest first: the limit cuts the most recently active
		switch {
		case !s.matches(l.Name):
			p.NotSelected++
		case s.Limit > 0 && len(keep) == s.Limit:
			p.OverLimit++
		default:
			keep = append(keep, l)
		}
	}
	p.leaked = keep
	return nil
}
