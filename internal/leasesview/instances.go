package leasesview

import (
	"context"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Instance is the EC2 instance named like a node lease (leases --aws): a zombie or leaked
// lease's Node is gone, so the lease name, the Node's name, is the private DNS name to look for.
type Instance struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Type       string    `json:"type"`
	LaunchTime time.Time `json:"launchTime,omitzero"`
}

// NodeColumn is an extra column of the node lease table, given to Print by a caller that knows
// more about the nodes than the cluster does.
type NodeColumn struct {
	Header string
	Cell   func(it *Item, now time.Time) string
}

// InstanceColumns are the columns of leases --aws: the instance, its state and launch time, on
// the rows AddInstances enriched (<none> elsewhere).
func InstanceColumns() []NodeColumn {
	get := func(f func(*Instance, time.Time) string) func(*Item, time.Time) string {
		return func(it *Item, now time.Time) string {
			if it.Instance == nil {
				return none
			}
			return f(it.Instance, now)
		}
	}
	return []NodeColumn{
		{Header: "INSTANCE", Cell: get(func(i *Instance, _ time.Time) string { return i.ID })},
		{Header: "STATE", Cell: get(func(i *Instance, _ time.Time) string { return i.State })},
		{Header: "LAUNCHED", Cell: get(func(i *Instance, now time.Time) string {
			if i.LaunchTime.IsZero() {
				return none
			}
			return age(i.LaunchTime, now) + " ago"
		})},
	}
}

// AddInstances looks up in EC2 the instances whose private DNS name is the name of a zombie or
// leaked node lease, in any state, and sets their Instance. A lease with no instance (Node names
// that are not private DNS names, instances terminated long ago) keeps none.
func AddInstances(ctx context.Context, api nkaws.EC2API, r *Report) error {
	want := map[string][]int{}
	var names []string
	for i := range r.Items {
		it := &r.Items[i]
		if it.Namespace != lease.NodeLeaseNamespace || (it.Class != lease.Zombie && it.Class != lease.Leaked) {
			continue
		}
		if want[it.Name] == nil {
			names = append(names, it.Name)
		}
		want[it.Name] = append(want[it.Name], i)
	}
	sort.Strings(names)
	name := "private-dns-name"
	for len(names) > 0 {
		batch := names[:min(len(names), 200)]
		names = names[len(batch):]
		insts, err := nkaws.DescribeInstances(ctx, api, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: &name, Values: batch}}})
		if err != nil {
			return err
		}
		// Several instances may have carried the name (a terminated one and its replacement):
		// the one launched last is the machine that matters.
		for _, inst := range insts {
			dns := ""
			if inst.PrivateDnsName != nil {
				dns = *inst.PrivateDnsName
			}
			for _, i := range want[dns] {
				cur := r.Items[i].Instance
				x := &Instance{Type: string(inst.InstanceType)}
				if inst.InstanceId != nil {
					x.ID = *inst.InstanceId
				}
				if inst.State != nil {
					x.State = string(inst.State.Name)
				}
				if inst.LaunchTime != nil {
					x.LaunchTime = inst.LaunchTime.UTC()
				}
				if cur == nil || x.LaunchTime.After(cur.LaunchTime) {
					r.Items[i].Instance = x
				}
			}
		}
	}
	return nil
}
