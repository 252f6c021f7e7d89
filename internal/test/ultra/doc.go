// Package ultra is issue 32's scale benchmark: 100,000 Nodes and their leases (10,000 of them
// leaked) on the real control plane, every nodekeeper command and the controller measured as a
// whole process beside its floor (the plainest client doing the same work) and its peer (kubectl),
// in one run, printed as one table (`make bench BENCH=ultra`; BenchmarkUltra). The package's own
// code is the floor: ListFloor, the bare paginated protobuf LIST that `nodekeeper leases -A` is
// held against, run in-process by the benchmark and as a process by ./floorlist.
//
// It is a benchmark harness: nothing but its benchmark and ./floorlist imports it.
package ultra
