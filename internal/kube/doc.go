// Package kube is the one place nodekeeper turns flags into API clients and the one place it
// states how it talks to the API server:
//
//   - content type: protobuf for the resources that support it (leases, Nodes' metadata, pods,
//     events), JSON only where an API serves nothing else (configz, /metrics, CRDs);
//   - client-side rate limits with ONE meaning of 0: no client-side limit (the API server's own
//     priority and fairness is the limit). client-go reads QPS 0 as "5 QPS"; nodekeeper never does;
//   - the user agent "nodekeeper/<version> (<command>)", so audit logs and API priority and
//     fairness see which command sent a request;
//   - the field manager name of nodekeeper's writes;
//   - the fixed rate limits of leader election and events, on side clients (SideConfig) whose
//     user agent adds their role: "nodekeeper/<version> (controller, leader-election)";
//   - the resources nodekeeper reads: Nodes as metadata only, leases with managedFields dropped;
//   - one pagination policy for LIST (Pages, and List for a typed client's List method): a
//     continue token that expired fails the listing with ErrListExpired and a message that says
//     what to do; there is no fallback to one unpaginated LIST, which would hold a whole large
//     cluster in memory at once.
//
// Every command that talks to a cluster (gc, leases, doctor, controller, and shell completion's
// namespace lookup) gets its rest config and clients from Options; gc, leasesview, doctor,
// deleter and the controller build and page with what this package gives them.
package kube
