package bundle

import (
	"bytes"
	"fmt"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// The user data itself is read by internal/bootstrap, which doctor --aws shares for launch
// templates; this file feeds what it finds into the bundle's analysis.

// MaxUserDataSize bounds --user-data. EC2 accepts 16 KB of user data (before base64); a gzip-free
// file far larger than that is not user data.
const MaxUserDataSize = bootstrap.MaxUserDataSize

// Bounds of the reader, named here for the tests.
const (
	maxUserDataInflated = bootstrap.MaxInflated
	maxUserDataProblems = bootstrap.MaxProblems
)

// ErrUserDataNotRecognised is wrapped (with ErrNotRecognised) by the error for --user-data that
// holds nothing cloud-init or nodeadm would run.
var ErrUserDataNotRecognised = bootstrap.ErrNotUserData

// CheckUserData reads user data as Analyze does and fails when nothing in it is user data that
// cloud-init or nodeadm would run, saying what was looked for.
func CheckUserData(name string, data []byte) error {
	_, err := splitUserData(name, data)
	return err
}

// splitUserData is bootstrap.Split for --user-data.
func splitUserData(name string, data []byte) (*bootstrap.UserData, error) {
	u, err := bootstrap.Split("--user-data "+quoteName(name), name, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRecognised, err)
	}
	return u, nil
}

// readUserData runs the bootstrap checks on the user data itself and takes the kubelet settings
// it gives (bootstrap.sh --kubelet-extra-args, NodeConfig spec.kubelet) as a configuration source.
func (a *analysis) readUserData(name string, data []byte) {
	a.userDataRead = true
	u, err := splitUserData(name, data)
	if err != nil {
		// Analyze refuses such user data first; should it get here, it is a problem.
		a.userDataProblems = append(a.userDataProblems, err.Error())
		return
	}
	for _, p := range u.Parts {
		if p.Kind == bootstrap.KindScript {
			_ = a.bootstrap.scan(p.Name, bytes.NewReader(p.Body), func(_ int, line []byte) { a.hintsFrom(line) })
		}
	}
	k := u.Kubelet()
	if k.NodeConfig {
		a.osHint = rules.OSAmazonLinux2023
	}
	if k.Set {
		a.userDataCfg, a.userDataSet, a.userDataSrc = k.Config, true, k.Source
	}
	a.userDataProblems = append(a.userDataProblems, u.Problems()...)
}

// reportUserDataProblems reports the parts of --user-data that could not be read.
func (a *analysis) reportUserDataProblems(rep *findings.Report) {
	for _, p := range a.userDataProblems {
		rep.Add(bootstrap.RuleUserDataUnreadable.New("--user-data", "%s", p))
	}
}

// reportUserDataConfig runs the configuration checks on a journal's companion user data.
func (a *analysis) reportUserDataConfig(rep *findings.Report) {
	if a.userDataSet {
		a.reportConfig(rep)
	}
}
