package lease

// Description is everything nodekeeper says about a class, in one place: every printer (the
// leases tables and summary, the gc plan, docs tables) reads it from here, so the words for a
// class can never differ between commands.
type Description struct {
	// Meaning is the short gloss of the MEANING column of `nodekeeper leases`.
	Meaning string
	// Explanation is one sentence for operators: what the class means and what nodekeeper does
	// about it.
	Explanation string
	// Action is what the controller and `nodekeeper gc` do with a lease of the class. Only
	// Leaked says "delete".
	Action string
}

// ActionDelete is the Action of the one class that may be deleted.
const ActionDelete = "delete"

// descriptions holds one Description per class.
var descriptions = map[Class]Description{
	Healthy: {
		Meaning:     "kubelet heartbeating",
		Explanation: "node heartbeat lease owned by its Node and renewed in time; nothing to do",
		Action:      "keep",
	},
	Stale: {
		Meaning:     "kubelet not renewing, Node exists",
		Explanation: "the Node exists but its kubelet stopped renewing the lease; the node lifecycle controller marks the Node Unknown",
		Action:      "keep",
	},
	Unowned: {
		Meaning:     "no ownerReference, to adopt",
		Explanation: "the Node exists but the lease has no ownerReference; nodekeeper adopts it so it is garbage-collected with its Node",
		Action:      "keep (the controller adopts)",
	},
	StaleOwner: {
		Meaning:     "Node re-created, upstream GC removes it",
		Explanation: "the lease is owned by an earlier Node of the same name (Node re-created); the upstream garbage collector removes it",
		Action:      "keep (garbage collector)",
	},
	OwnerMissing: {
		Meaning:     "Node deleted, upstream GC pending",
		Explanation: "the lease's owner Node no longer exists; the upstream garbage collector has yet to remove it",
		Action:      "keep (garbage collector)",
	},
	Zombie: {
		Meaning:     "no Node, renewed within grace",
		Explanation: "no Node and no owner, but renewed recently: a kubelet runs without its Node; reported, never deleted (it would come back)",
		Action:      "keep (kubelet alive)",
	},
	Leaked: {
		Meaning:     "leaked, safe to delete",
		Explanation: "no Node, no owner, not renewed for longer than the grace period: a leaked lease that nodekeeper deletes",
		Action:      ActionDelete,
	},
	Leader: {
		Meaning:     "leader-election lock",
		Explanation: "leader-election lock of a controller; reported only",
		Action:      "keep",
	},
	APIServerIdentity: {
		Meaning:     "kube-apiserver identity",
		Explanation: "kube-apiserver identity lease; kube-apiserver garbage-collects these itself",
		Action:      "keep",
	},
	Other: {
		Meaning:     "not recognised",
		Explanation: "a lease nodekeeper does not recognise as a kubelet heartbeat or leader lock; reported only",
		Action:      "keep",
	},
}

// Describe returns the description of c. A class this build does not know (read from a newer
// report, say) is described as unknown and kept, never deleted.
func (c Class) Describe() Description {
	if d, ok := descriptions[c]; ok {
		return d
	}
	return Description{Meaning: string(c), Explanation: "unknown lease class", Action: "keep"}
}

// Explain returns the class's one-line Explanation.
func (c Class) Explain() string { return c.Describe().Explanation }
