// Package read turns audit-log inputs into a stream of compact records in stageTimestamp order.
//
// It owns everything about the bytes of an input: expanding arguments into inputs, sniffing
// the layout (JSON lines, arrays, pretty-printed streams, CloudWatch Logs exports and
// subscription payloads), gzip, cutting records out of a stream without holding more than the
// line limit of any one, the allocation-free JSON scanner that reads only the fields the
// analysis needs (guessing each key from the order the last lines had and recognising repeated
// values by their bytes), the string table, and the pipeline that parses chunks on all cores
// and merges them back in order. What a record means is the analysis' business, not this one's.
//
// It may import only the standard library: nothing of analyze or render, no Kubernetes
// package (reading a log needs no cluster).
package read
