// Package e2e runs bin/nodekeeper, the binary `make build` produces from this tree, the way a
// user runs it: a separate process with a clean environment (its own HOME and TMPDIR, no AWS
// variables but those a test sets), a kubeconfig named the way `aws eks update-kubeconfig`
// names it, AWS reached through AWS_ENDPOINT_URL (moto, internal/test/motoserver), real
// files as input, real signals, and its exit codes and output read as a user or a script reads
// them. Each command is run at least once: leases (and --watch), gc, doctor, audit, bundle,
// maxpods, plan (--aws), sandbox, controller (as a subcommand and as bin/nodekeeper-controller)
// and version.
//
// TestMain runs `make build` in the repository root first, so what is tested is what ships, and
// starts one shared control plane (internal/test/testenv) with an audit log; the sandbox test starts
// its own through the binary. It contains tests only; run them with `go test ./internal/test/e2e/`.
// They run on Linux only (build tag): the control plane does, and the sandbox test reads /proc
// and uses parent-death signals.
package e2e
