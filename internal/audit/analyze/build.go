package analyze

import (
	"errors"
	"sort"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// report turns the analyzer's state into a Report, applying the report filters.
func (a *analyzer) report() (*Report, error) {
	s := a.in.Snapshot()
	rep := &Report{Filters: Filters{Node: a.opts.Node, Lease: a.opts.Lease, User: a.opts.User,
		Since: a.opts.Since, Until: a.opts.Until}}
	if a.from > a.to { // only watches
		a.from, a.to = a.wfrom, a.wto
	}
	if a.from <= a.to {
		rep.From, rep.To = time.Unix(0, a.from).UTC(), time.Unix(0, a.to).UTC()
	}
	var errs []error
	t := a.totals
	stats, readErrs := a.p.Results()
	for i, st := range stats {
		rep.Inputs = append(rep.Inputs, st)
		t.Lines += st.Lines
		t.Events += st.Events
		t.SkippedStages += st.SkipStage
		t.OutsideWindow += st.Filtered
		t.Salvaged += st.Salvaged
		for _, b := range st.Bad {
			t.Bad += b.Count
		}
		if err := readErrs[i]; err != nil {
			errs = append(errs, err)
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	t.Duplicates = a.p.Duplicates()
	t.OutOfOrder = a.p.OutOfOrder()
	t.Events -= t.Duplicates
	rep.Totals = t

	actor := func(r *read.Record, aux *read.RecordAux) Actor {
		ac := Actor{User: s(r.User), UserAgent: s(r.UA), SourceIP: s(r.IP), Identity: s(r.Ident)}
		if aux != nil {
			ac.ImpersonatedBy = aux.RealUser
		}
		return ac
	}
	event := func(e *lcEvent) Event {
		return Event{Time: ts(e.rec.Recv), Action: e.kind, Code: int(e.rec.Code), Actor: actor(&e.rec, &e.aux),
			Owners: e.aux.OwnerNames, OwnersKnown: e.rec.Flags&(read.FlagOwnerNone|read.FlagOwnerPresent) != 0,
			AuditID: e.aux.AuditID, Where: a.where(&e.rec), Salvaged: e.rec.Flags&read.FlagSalvaged != 0}
	}
	follow := func(f *followUp, since int64) *FollowUp {
		if f == nil {
			return nil
		}
		return &FollowUp{Time: ts(f.rec.Recv), After: time.Duration(f.rec.Recv - since), Actor: actor(&f.rec, f.rec.Aux),
			Code: int(f.rec.Code), How: f.how}
	}
	userOK, nodeOK, leaseOK := a.userMatch, a.nodeMatch, a.leaseMatch

	for _, d := range a.deletions {
		if !nodeOK(d.ev.rec.Name) || !userOK(d.ev.rec.User) {
			continue
		}
		at := d.ev.rec.Recv
		nd := NodeDeletion{Node: s(d.ev.rec.Name), Event: event(&d.ev), RequestsAfter: d.requests,
			LeaseDeleted: follow(d.leaseDeleted, at), LeaseRecreated: follow(d.leaseRecreated, at),
			NodeRecreated: follow(d.nodeRecreated, at)}
		if d.requests > 0 {
			f, l := ts(d.first), ts(d.last)
			nd.FirstRequest, nd.LastRequest = &f, &l
		}
		rep.NodeDeletions = append(rep.NodeDeletions, nd)
	}

	for i := range a.nodeCreates {
		rep.NodeCreations = append(rep.NodeCreations, event(&a.nodeCreates[i]))
	}

	var leases []*leaseState
	for _, ls := range a.leases {
		if leaseOK(ls.ns, ls.name) {
			leases = append(leases, ls)
		}
	}
	sort.Slice(leases, func(i, j int) bool {
		if leases[i].ns != leases[j].ns {
			return s(leases[i].ns) < s(leases[j].ns)
		}
		return s(leases[i].name) < s(leases[j].name)
	})
	for _, ls := range leases {
		evs, omitted := ls.ring.all()
		ll := LeaseLifecycle{Namespace: s(ls.ns), Name: s(ls.name), Creates: ls.creates, Deletes: ls.deletes,
			UpdateCreates: ls.updateCreates, Omitted: omitted}
		any := !a.fUserSet
		for i := range evs {
			if userOK(evs[i].rec.User) {
				any = true
			}
			ll.Events = append(ll.Events, event(&evs[i]))
		}
		if any {
			rep.Leases = append(rep.Leases, ll)
		}
	}

	for _, l := range a.leaks {
		if !leaseOK(l.ns, l.name) || !userOK(l.created.rec.User) {
			continue
		}
		lk := Leak{Namespace: s(l.ns), Name: s(l.name), Cause: l.cause, Created: event(&l.created), Status: l.status}
		if l.deletion != nil {
			e := event(l.deletion)
			lk.NodeDeletion = &e
		}
		if l.statusEv != nil {
			lk.StatusEvent = follow(l.statusEv, l.created.rec.Recv)
		}
		rep.Leaks = append(rep.Leaks, lk)
	}

	for _, ep := range a.episodes {
		if !nodeOK(ep.node) || (a.fUserSet && s(a.fUser) != read.NodeUserPrefix+s(ep.node)) {
			continue
		}
		dur := time.Duration(ep.last - ep.first)
		if dur < a.opts.ZombieMinDuration {
			continue
		}
		if ep.del == nil && ep.selfNotFound < 3 {
			continue
		}
		z := Zombie{Node: s(ep.node), FirstSeen: ts(ep.first), LastSeen: ts(ep.last), Duration: dur,
			Requests: ep.requests, LeaseRecreations: ep.leaseRecreations, Status: "running"}
		if dur > 0 {
			z.PerMinute = float64(ep.requests-1) / dur.Minutes()
		}
		if ep.del != nil {
			e := event(&ep.del.ev)
			z.Deletion = &e
		}
		for _, id := range ep.ips {
			z.SourceIPs = append(z.SourceIPs, s(id))
		}
		for _, id := range ep.idents {
			z.Identities = append(z.Identities, s(id))
		}
		for _, id := range ep.uas {
			z.UserAgents = append(z.UserAgents, s(id))
		}
		for k, n := range ep.calls {
			z.Calls = append(z.Calls, CallCount{Verb: k.verb.String(), Resource: s(k.res), Code: int(k.code), Count: n})
		}
		sort.Slice(z.Calls, func(i, j int) bool {
			ci, cj := z.Calls[i], z.Calls[j]
			if ci.Count != cj.Count {
				return ci.Count > cj.Count
			}
			return ci.Verb+ci.Resource < cj.Verb+cj.Resource || (ci.Verb+ci.Resource == cj.Verb+cj.Resource && ci.Code < cj.Code)
		})
		if ep.ended != nil {
			z.Status = "ended"
			z.Ended = follow(ep.ended, ep.first)
		}
		rep.Zombies = append(rep.Zombies, z)
	}

	rep.LeaseChurn = a.churn.build(s, a.opts.ChurnThreshold)
	rep.Heartbeats = a.buildHeartbeats(s)
	a.buildTalkers(rep, s)
	rep.AccessDenied = a.denied.build(s, a.opts.Top)
	rep.Bounds = a.bounds
	rep.Bounds.NamesNotKept = a.in.NotKept()
	a.buildTimeline(rep, s)
	// Empty lists are [] in JSON, not null: consumers iterate without checks.
	rep.NodeDeletions = nonNil(rep.NodeDeletions)
	rep.Leases = nonNil(rep.Leases)
	rep.Leaks = nonNil(rep.Leaks)
	rep.Zombies = nonNil(rep.Zombies)
	rep.TopByRequests = nonNil(rep.TopByRequests)
	rep.TopByLatency = nonNil(rep.TopByLatency)
	rep.Throttling.ByKey = nonNil(rep.Throttling.ByKey)
	rep.Throttling.ByUser = nonNil(rep.Throttling.ByUser)
	for i := range rep.Zombies {
		rep.Zombies[i].SourceIPs = nonNil(rep.Zombies[i].SourceIPs)
		rep.Zombies[i].UserAgents = nonNil(rep.Zombies[i].UserAgents)
		rep.Zombies[i].Calls = nonNil(rep.Zombies[i].Calls)
	}
	rep.Totals.Throttled = t.Throttled
	if len(errs) > 0 {
		return rep, errors.Join(errs...)
	}
	return rep, nil
}

// userMatch, nodeMatch and leaseMatch apply the report filters to a user, a node and a lease.
func (a *analyzer) userMatch(u uint32) bool { return !a.fUserSet || u == a.fUser }

func (a *analyzer) nodeMatch(name uint32) bool {
	return (!a.fNodeSet || name == a.fNode) && (!a.fLeaseSet || name == a.fLease)
}

func (a *analyzer) leaseMatch(ns, name uint32) bool {
	if a.fNodeSet && (name != a.fNode || ns != a.idNodeLeaseNS) {
		return false
	}
	return !a.fLeaseSet || (name == a.fLease && (a.fLeaseNS == 0 || ns == a.fLeaseNS))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func ts(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func (a *analyzer) buildTalkers(rep *Report, s func(uint32) string) {
	type kv struct {
		k   talkerKey
		t   *talkerStat
		str string // the key's strings, the order of ties
	}
	// A stable order for ties: by the key's strings, joined once per talker (joining them in
	// the comparison made two strings per comparison: on 8,000 talkers 50 MB and a tenth of the
	// run).
	keyStr := func(k talkerKey) string {
		return s(k.user) + "\x00" + s(k.ua) + "\x00" + k.verb.String() + "\x00" + s(k.res)
	}
	all := make([]kv, 0, len(a.talkers))
	byUser := map[uint32]*talkerStat{}
	for k, t := range a.talkers {
		all = append(all, kv{k, t, keyStr(k)})
		if t.throttled > 0 || t.apfN > 0 {
			u := byUser[k.user]
			if u == nil {
				u = &talkerStat{}
				byUser[k.user] = u
			}
			u.requests += t.requests
			u.throttled += t.throttled
			u.serverErrors += t.serverErrors
			u.apfN += t.apfN
			u.apfSum += t.apfSum
			u.apfMax = max(u.apfMax, t.apfMax)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].str < all[j].str })
	mk := func(k talkerKey, t *talkerStat) Talker {
		return Talker{User: s(k.user), UserAgent: s(k.ua), Verb: k.verb.String(), Resource: s(k.res),
			Requests: t.requests, RequestsError: t.requestsErr, Throttled: t.throttled, ServerErrors: t.serverErrors,
			LatencyTotal: time.Duration(t.latSum), LatencyMax: time.Duration(t.latMax),
			LatencyP99: time.Duration(min(t.hist.quantile(0.99, t.latN), t.latMax)),
			APFWaited:  t.apfN, APFWaitTotal: time.Duration(t.apfSum) * time.Microsecond,
			APFWaitMax: time.Duration(t.apfMax) * time.Microsecond}
	}
	top := func(less func(a, b *talkerStat) bool, keep func(*talkerStat) bool) []Talker {
		idx := make([]int, 0, len(all))
		for i := range all {
			if keep(all[i].t) {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(i, j int) bool { return less(all[idx[i]].t, all[idx[j]].t) })
		var out []Talker
		for _, i := range idx {
			if len(out) == a.opts.Top {
				break
			}
			out = append(out, mk(all[i].k, all[i].t))
		}
		return out
	}
	rep.TopByRequests = top(func(x, y *talkerStat) bool { return x.requests > y.requests },
		func(*talkerStat) bool { return true })
	rep.TopByLatency = top(func(x, y *talkerStat) bool { return x.latSum > y.latSum },
		func(t *talkerStat) bool { return t.latN > 0 })
	rep.Throttling.ByKey = top(func(x, y *talkerStat) bool {
		if x.throttled != y.throttled {
			return x.throttled > y.throttled
		}
		return x.apfSum > y.apfSum
	}, func(t *talkerStat) bool { return t.throttled > 0 || t.apfN > 0 })
	users := make([]uint32, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool {
		x, y := byUser[users[i]], byUser[users[j]]
		if x.throttled != y.throttled {
			return x.throttled > y.throttled
		}
		if x.apfSum != y.apfSum {
			return x.apfSum > y.apfSum
		}
		return s(users[i]) < s(users[j])
	})
	for _, u := range users {
		if len(rep.Throttling.ByUser) == a.opts.Top {
			break
		}
		t := byUser[u]
		rep.Throttling.ByUser = append(rep.Throttling.ByUser, Talker{User: s(u), Requests: t.requests,
			Throttled: t.throttled, ServerErrors: t.serverErrors, APFWaited: t.apfN,
			APFWaitTotal: time.Duration(t.apfSum) * time.Microsecond, APFWaitMax: time.Duration(t.apfMax) * time.Microsecond})
	}
	rep.Throttling.Throttled = a.throttled
	rep.Throttling.APFWaited = a.apfWaited
}

func (a *analyzer) buildTimeline(rep *Report, s func(uint32) string) {
	if a.series.b == nil {
		return
	}
	width := a.series.width
	lo := a.series.origin
	hi := a.series.origin + int64(len(a.series.b))*a.series.width
	for _, us := range a.userThrot {
		width = max(width, us.width)
		lo = min(lo, us.origin)
		hi = max(hi, us.origin+int64(len(us.b))*us.width)
	}
	lo = floorDiv(lo, width) * width
	n := int(floorDiv(hi-1-lo, width)) + 1
	// Keep charts readable: at most 240 bars.
	for n > 240 {
		width = nextWidth(width)
		lo = floorDiv(lo, width) * width
		n = int(floorDiv(hi-1-lo, width)) + 1
	}
	bs := a.series.rebucket(lo, width, n)
	tl := Timeline{Start: ts(lo), Step: time.Duration(width)}
	for _, b := range bs {
		tl.Requests = append(tl.Requests, b.Requests)
		tl.Throttled = append(tl.Throttled, b.Throttled)
		w := 0.0
		if b.APFWaited > 0 {
			w = float64(b.APFWaitUS) / float64(b.APFWaited) / 1000
		}
		tl.APFWaitMS = append(tl.APFWaitMS, w)
	}
	for _, t := range rep.Throttling.ByUser {
		if len(tl.ThrottledUsers) == 5 || t.Throttled == 0 {
			break
		}
		id := a.in.Intern([]byte(t.User))
		us := a.userThrot[id]
		if us == nil {
			continue
		}
		ubs := us.rebucket(lo, width, n)
		series := UserSeries{User: t.User}
		for _, b := range ubs {
			series.Throttled = append(series.Throttled, b.Throttled)
		}
		tl.ThrottledUsers = append(tl.ThrottledUsers, series)
	}
	rep.Timeline = tl
}
