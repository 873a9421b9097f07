package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// allocGangLine is alloc status's Gang value: "workers, rank 1 of 2,
// leader 10.0.0.5:29500".
func allocGangLine(g *api.AllocGang) string {
	s := fmt.Sprintf("%s, rank %d of %d", g.ID, g.Rank, g.Size)
	if g.LeaderAddr != "" {
		s += ", leader " + g.LeaderAddr
	}
	return s
}

// printGangMembers is alloc status -verbose's table of the alloc's gang
// (full IDs, as -verbose shows them).
func printGangMembers(w io.Writer, g *api.AllocGang) {
	fmt.Fprintln(w, "\nGang Members")
	rows := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s\t%s", m.Rank, m.AllocID, m.Name, m.NodeID, m.Address))
	}
	table(w, "Rank\tAlloc ID\tName\tNode ID\tAddress", rows)
}

// jobGang is one gang of a job as job status shows it.
type jobGang struct {
	id      string
	gang    *api.Gang
	groups  []string
	members int // the groups' counts together
}

// jobGangs lists a job's gangs in group order: the job-wide gang, or one
// per group with a gang block.
func jobGangs(job *api.Job) []jobGang {
	var out []jobGang
	for _, tg := range job.TaskGroups {
		g, id := job.GangOf(tg)
		if g == nil {
			continue
		}
		if len(out) > 0 && out[len(out)-1].id == id {
			out[len(out)-1].groups = append(out[len(out)-1].groups, tg.Name)
			out[len(out)-1].members += tg.Count
			continue
		}
		out = append(out, jobGang{id: id, gang: g, groups: []string{tg.Name}, members: tg.Count})
	}
	return out
}

// min is the fewest members the gang runs with (0 in the spec: all).
func (g jobGang) min() int {
	if g.gang.Min > 0 {
		return g.gang.Min
	}
	return g.members
}

// printGangs is job status's Gangs section (nothing for a job without
// gangs): each gang's groups, members, min, timeout and topology.
func printGangs(w io.Writer, job *api.Job) {
	gangs := jobGangs(job)
	if len(gangs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nGangs")
	rows := make([]string, 0, len(gangs))
	for _, g := range gangs {
		timeout := "none (waits)"
		if g.gang.Timeout > 0 {
			timeout = g.gang.Timeout.String()
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%s", g.id, strings.Join(g.groups, ","), g.members, g.min(), timeout, topologyText(g.gang.Topology)))
	}
	table(w, "Gang\tTask Groups\tMembers\tMin\tTimeout\tTopology", rows)
}

func topologyText(t *api.Topology) string {
	if t == nil {
		return "-"
	}
	mode := t.Mode
	if mode == "" {
		mode = api.TopologyPreferred
	}
	return t.Level + " (" + mode + ")"
}

// gangFailureLine explains, under a gang group's placement failure, that
// the gang is placed whole or not at all and holds nothing meanwhile.
func gangFailureLine(job *api.Job, group string) string {
	if job == nil {
		return ""
	}
	for _, g := range jobGangs(job) {
		for _, n := range g.groups {
			if n != group {
				continue
			}
			s := fmt.Sprintf("  * Gang %q (%d members, min %d) is placed whole or not at all: nothing is held until all fit", g.id, g.members, g.min())
			if g.gang.Timeout > 0 {
				s += "; placement fails after " + g.gang.Timeout.String()
			}
			if t := g.gang.Topology; t != nil && t.Mode == api.TopologyRequired {
				s += "; members must share one " + strconv.Quote(t.Level)
			}
			return s
		}
	}
	return ""
}

// gangAttempt is one placement of a gang: the members one plan placed
// together (one evaluation), by rank.
type gangAttempt struct {
	allocs  []*api.AllocListStub
	created uint64 // the lowest CreateIndex of its allocs
}

// liveMember reports whether a gang member still runs or waits to.
func liveMember(a *api.AllocListStub) bool {
	switch a.ClientStatus {
	case api.AllocClientStatusComplete, api.AllocClientStatusFailed, api.AllocClientStatusLost:
		return false
	}
	return a.DesiredStatus == api.AllocDesiredStatusRun
}

// gangAttempts splits gang id's allocs into the current members (the live
// ones, which later plans may have joined; without any, the newest
// attempt) and the earlier attempts, newest first.
func gangAttempts(id string, allocs []*api.AllocListStub) (current []*api.AllocListStub, earlier []gangAttempt) {
	byEval := map[string]*gangAttempt{}
	var order []*gangAttempt
	for _, a := range allocs {
		if a.Gang == nil || a.Gang.ID != id {
			continue
		}
		if liveMember(a) {
			current = append(current, a)
		}
		t := byEval[a.EvalID]
		if t == nil {
			t = &gangAttempt{created: a.CreateIndex}
			byEval[a.EvalID] = t
			order = append(order, t)
		}
		t.allocs = append(t.allocs, a)
		t.created = min(t.created, a.CreateIndex)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].created > order[j].created })
	for _, t := range order {
		sort.SliceStable(t.allocs, func(i, j int) bool { return t.allocs[i].Gang.Rank < t.allocs[j].Gang.Rank })
		hasLive := false
		for _, a := range t.allocs {
			hasLive = hasLive || liveMember(a)
		}
		if !hasLive {
			earlier = append(earlier, *t)
		}
	}
	if len(current) == 0 && len(earlier) > 0 {
		current, earlier = earlier[0].allocs, earlier[1:]
	}
	sort.SliceStable(current, func(i, j int) bool { return current[i].Gang.Rank < current[j].Gang.Rank })
	return current, earlier
}

// gangRacks looks up the rack (node meta topology.rack) of each node a
// gang member of the job runs on; a node it cannot read shows no rack.
func gangRacks(ctx context.Context, c *api.Client, allocs []*api.AllocListStub) map[string]string {
	racks := map[string]string{}
	for _, id := range gangNodeIDs(allocs) {
		if n, _, err := c.Node(ctx, id, nil); err == nil {
			racks[id] = n.Meta[api.TopologyMetaPrefix+"rack"]
		}
	}
	return racks
}

// gangNodeIDs are the nodes of the job's gang members (job status looks
// up their racks).
func gangNodeIDs(allocs []*api.AllocListStub) []string {
	seen := map[string]bool{}
	var ids []string
	for _, a := range allocs {
		if a.Gang != nil && a.NodeID != "" && !seen[a.NodeID] {
			seen[a.NodeID] = true
			ids = append(ids, a.NodeID)
		}
	}
	return ids
}

// printGangMembersOfJob is, under job status's Gangs table, each gang's
// state, placed size, leader address and members by rank (node, rack
// from racks by node ID, status), then its earlier attempts and why they
// ended. A pending gang points at its reservation.
func printGangMembersOfJob(w io.Writer, job *api.Job, allocs []*api.AllocListStub, evals []*api.Evaluation, racks map[string]string) {
	for _, g := range jobGangs(job) {
		current, earlier := gangAttempts(g.id, allocs)
		var res *api.Reservation
		for _, e := range evals {
			if e.Status != api.EvalStatusBlocked || e.Reservation == nil {
				continue
			}
			for _, n := range e.Reservation.Groups {
				if slices.Contains(g.groups, n) {
					res = e.Reservation
				}
			}
		}
		state := "finished"
		switch {
		case slices.ContainsFunc(current, func(a *api.AllocListStub) bool {
			return liveMember(a) && a.ClientStatus == api.AllocClientStatusRunning
		}):
			state = "running"
		case slices.ContainsFunc(current, liveMember):
			state = "starting"
		case res != nil || len(current) == 0:
			state = "pending"
		}
		fmt.Fprintf(w, "\nGang %q (%s): ", g.id, state)
		if len(current) == 0 {
			fmt.Fprintf(w, "nothing placed, needs %d of %d members at once", g.min(), g.members)
		} else {
			leader := "-"
			for _, a := range current {
				if a.Gang.LeaderAddr != "" {
					leader = a.Gang.LeaderAddr
					break
				}
			}
			fmt.Fprintf(w, "%d placed of %d, min %d, leader %s", current[0].Gang.Size, g.members, g.min(), leader)
		}
		if res != nil {
			fmt.Fprintf(w, "; holds a reservation on %d nodes", len(res.Nodes))
		}
		fmt.Fprintln(w)
		if len(current) > 0 {
			rows := make([]string, 0, len(current))
			for _, a := range current {
				rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", a.Gang.Rank, short(a.ID), a.Name, nodeText(a), orDash(racks[a.NodeID]), memberStatus(a)))
			}
			table(w, "Rank\tAlloc ID\tName\tNode\tRack\tStatus", rows)
		}
		if len(earlier) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nEarlier Attempts of Gang %q\n", g.id)
		rows := make([]string, 0, len(earlier))
		for i, t := range earlier {
			ids := make([]string, 0, len(t.allocs))
			var created int64
			whys := []string{}
			for _, a := range t.allocs {
				ids = append(ids, fmt.Sprintf("%d:%s", a.Gang.Rank, short(a.ID)))
				if created == 0 || a.CreateTime < created {
					created = a.CreateTime
				}
				why := a.DesiredDescription
				if why == "" {
					why = a.ClientDescription
				}
				if why != "" && !slices.Contains(whys, why) {
					whys = append(whys, why)
				}
			}
			rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s\t%s", len(earlier)-i, fmtUnixNano(created), strings.Join(ids, ","), attemptOutcome(t.allocs), orDash(strings.Join(whys, "; "))))
		}
		table(w, "Attempt\tPlaced\tAllocs (rank:id)\tOutcome\tWhy It Ended", rows)
	}
}

// nodeText is a member's node: its name, else its short ID.
func nodeText(a *api.AllocListStub) string {
	if a.NodeName != "" {
		return a.NodeName
	}
	return orDash(short(a.NodeID))
}

// memberStatus is a member's client status, with its desired status when
// that is no longer run ("running (stop)").
func memberStatus(a *api.AllocListStub) string {
	if a.DesiredStatus != "" && a.DesiredStatus != api.AllocDesiredStatusRun {
		return a.ClientStatus + " (" + a.DesiredStatus + ")"
	}
	return a.ClientStatus
}

// attemptOutcome counts an attempt's members by client status: "1 failed, 1 complete".
func attemptOutcome(allocs []*api.AllocListStub) string {
	counts := map[string]int{}
	var order []string
	for _, a := range allocs {
		if counts[a.ClientStatus] == 0 {
			order = append(order, a.ClientStatus)
		}
		counts[a.ClientStatus]++
	}
	parts := make([]string, 0, len(order))
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	return strings.Join(parts, ", ")
}
