package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/drover/drover/api"
)

// drainUpdate is one blocking-query answer of the drain monitor.
type drainUpdate struct {
	node   *api.Node
	allocs []*api.Allocation
	err    error
}

// monitorDrain follows a node's drain, as Nomad's `node drain -monitor`:
// it prints each alloc marked for migration, stopped by the drain and
// changing client status, until the drain is over (complete, or canceled
// by -disable), then says which. Reads are blocking queries, no polling.
func monitorDrain(ctx context.Context, w io.Writer, c *api.Client, nodeID string) error {
	fmt.Fprintf(w, "%s: Monitoring node %q: Ctrl-C to detach monitoring\n", now(), short(nodeID))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan drainUpdate)
	send := func(u drainUpdate) bool {
		select {
		case updates <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() { // the node
		var idx uint64
		for {
			n, m, err := c.Node(ctx, nodeID, &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Minute})
			if err != nil {
				send(drainUpdate{err: err})
				return
			}
			idx = m.LastIndex
			if !send(drainUpdate{node: n}) {
				return
			}
		}
	}()
	go func() { // its allocations
		var idx uint64
		for {
			as, m, err := c.NodeAllocations(ctx, nodeID, &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Minute})
			if err != nil {
				send(drainUpdate{err: err})
				return
			}
			idx = m.LastIndex
			if !send(drainUpdate{allocs: as}) {
				return
			}
		}
	}()
	seen := map[string]*api.Allocation{}
	first := true
	for {
		var u drainUpdate
		select {
		case u = <-updates:
		case <-ctx.Done():
			return nil // detached
		}
		switch {
		case u.err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return cmdErr("monitor drain of node %q: %w", short(nodeID), u.err)
		case u.node != nil:
			if u.node.DrainStrategy != nil {
				continue
			}
			// The drain is over: what its allocs did up to now (the two
			// watches answer in either order) is said before it.
			if as, _, err := c.NodeAllocations(ctx, nodeID, nil); err == nil {
				for _, line := range drainEvents(seen, as, first) {
					fmt.Fprintf(w, "%s: %s\n", now(), line)
				}
			}
			if l := u.node.LastDrain; l != nil && l.Status == api.DrainStatusComplete {
				fmt.Fprintf(w, "%s: Drain complete for node %q\n", now(), short(nodeID))
			} else {
				fmt.Fprintf(w, "%s: Node %q is not draining (drain canceled or never started)\n", now(), short(nodeID))
			}
			return nil
		default:
			for _, line := range drainEvents(seen, u.allocs, first) {
				fmt.Fprintf(w, "%s: %s\n", now(), line)
			}
			first = false
		}
	}
}

// drainEvents compares the node's allocs with the last ones seen (which it
// updates) and says what the drain did to them. The first call only
// records allocs already terminal, so a monitor does not replay history.
func drainEvents(seen map[string]*api.Allocation, allocs []*api.Allocation, first bool) []string {
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].ID < allocs[j].ID })
	var out []string
	for _, a := range allocs {
		prev := seen[a.ID]
		seen[a.ID] = a
		if prev == nil && first && a.ClientTerminalStatus() {
			continue
		}
		id := short(a.ID)
		if a.DesiredTransition.ShouldMigrate() && (prev == nil || !prev.DesiredTransition.ShouldMigrate()) {
			out = append(out, fmt.Sprintf("Alloc %q marked for migration", id))
		}
		if a.DesiredStatus != api.AllocDesiredStatusRun && (prev == nil || prev.DesiredStatus == api.AllocDesiredStatusRun) {
			out = append(out, fmt.Sprintf("Alloc %q draining", id))
		}
		if prev != nil && prev.ClientStatus != a.ClientStatus {
			out = append(out, fmt.Sprintf("Alloc %q status %s -> %s", id, prev.ClientStatus, a.ClientStatus))
		}
	}
	return out
}
