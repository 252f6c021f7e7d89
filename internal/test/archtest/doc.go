// Package archtest enforces the import rules of docs/architecture.md ("Import rules") for the
// whole module: which packages each package may import, that no product package imports a test
// harness, and that nothing imports cmd. The rules are data in rules_test.go, checked against
// `go list` of the module.
//
// It contains tests only; run them with `go test ./internal/test/archtest/`.
package archtest
