// Package analyze follows every node and lease through the records of an audit log and builds
// the Report: node deletions and what followed, lease lifecycles, leaks, zombie kubelets,
// lease churn, kubelet heartbeats, access denied, throttling and top talkers, with every table bounded in memory whatever the
// number of distinct keys (space-saving top-K for talkers, caps with "not tracked" counts
// elsewhere, totals always exact).
//
// It may import read (for inputs and records) and the standard library; it never renders
// (render imports it, not the other way round).
package analyze
