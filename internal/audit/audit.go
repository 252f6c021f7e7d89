// Package audit reads kube-apiserver audit logs (and their EKS exports) and tells what happened
// to nodes and their leases: who deleted nodes, lease lifecycles, leaks, zombie kubelets, access
// denied, throttling and top talkers.
//
// This package is the facade the commands use; the work is done by three subpackages, one job
// each, which import one another only downwards:
//
//   - read: inputs and their layouts, decompression, bounded records, the JSON scanner and the
//     parallel pipeline that yields compact records in stageTimestamp order. Imports only the
//     standard library.
//   - analyze: per-node, per-lease and per-talker state with memory bounds, and the Report.
//     Imports read.
//   - render: the text and HTML forms of a Report. Imports analyze, read (for names shared with
//     the report) and textsafe.
//
// The names below are aliases and thin wrappers, so callers never import the subpackages.
package audit

import (
	"io"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
)

// Inputs and how they are read.
type (
	Input       = read.Input
	ReadOptions = read.Options
	SourceStats = read.SourceStats
	BadSummary  = read.BadSummary
	BadExample  = read.BadExample
	Verb        = read.Verb
	// Progress and ProgressFunc report how far Analyze has got (Options.Progress).
	Progress     = read.Progress
	ProgressFunc = read.ProgressFunc
)

// InputsSize is the total the progress' Bytes reaches, or 0 when it is not known in advance
// (standard input, CloudWatch).
func InputsSize(inputs []Input) int64 { return read.InputsSize(inputs) }

// ExpandInputs turns command-line arguments (files, directories, globs, "-") into inputs.
func ExpandInputs(args []string, stdin io.Reader) ([]Input, error) {
	return read.ExpandInputs(args, stdin)
}

// ParseTimeFlag parses a --since or --until value.
func ParseTimeFlag(s string) (time.Time, error) { return read.ParseTimeFlag(s) }

// The analysis and its report.
type (
	Options        = analyze.Options
	Report         = analyze.Report
	Bounds         = analyze.Bounds
	Filters        = analyze.Filters
	Totals         = analyze.Totals
	Actor          = analyze.Actor
	Event          = analyze.Event
	FollowUp       = analyze.FollowUp
	NodeDeletion   = analyze.NodeDeletion
	LeaseLifecycle = analyze.LeaseLifecycle
	Leak           = analyze.Leak
	Zombie         = analyze.Zombie
	CallCount      = analyze.CallCount
	Talker         = analyze.Talker
	Throttling     = analyze.Throttling
	Timeline       = analyze.Timeline
	UserSeries     = analyze.UserSeries
	AccessDenied   = analyze.AccessDenied
	Denial         = analyze.Denial
)

// Leak statuses.
const (
	LeakLeaked        = analyze.LeakLeaked
	LeakDeleted       = analyze.LeakDeleted
	LeakAdopted       = analyze.LeakAdopted
	LeakNodeRecreated = analyze.LeakNodeRecreated
)

// Leak causes.
const (
	CauseAfterNodeDeletion = analyze.CauseAfterNodeDeletion
	CauseNodeMissing       = analyze.CauseNodeMissing
	CauseNoOwner           = analyze.CauseNoOwner
)

// Analyze reads the inputs and builds the report (see analyze.Analyze).
func Analyze(inputs []Input, opts Options) (*Report, error) { return analyze.Analyze(inputs, opts) }

// AnalyzeReader analyses one stream (for tests and standard input).
func AnalyzeReader(name string, r io.Reader, opts Options) (*Report, error) {
	return analyze.AnalyzeReader(name, r, opts)
}

// WriteText writes the report for people.
func WriteText(w io.Writer, r *Report) error { return render.WriteText(w, r) }

// WriteHTML writes the report as one self-contained page.
func WriteHTML(w io.Writer, r *Report) error { return render.WriteHTML(w, r) }
