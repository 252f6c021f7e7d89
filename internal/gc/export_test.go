package gc

import "github.com/nodekeeper/nodekeeper/internal/test/testenv"

// What the in-process CLI test (package gc_test, which may import the command tree that
// imports this package) shares with the package's own tests: one control plane, one fixture.
var (
	TestEnv       = func() *testenv.Env { return env }
	MixedCluster  = mixedCluster
	GrantReadOnly = grantReadOnly
	ParseReport   = parseReport
)
