package cli

import (
	"fmt"
	"io"
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
