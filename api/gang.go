package api

import (
	"fmt"
	"time"
)

// Gang makes a set of allocs one scheduling unit: they are placed in one
// plan, committed in one Raft entry, or not at all. On a group (gang {}
// in the group block) the group's Count allocs are the gang; on the job
// (gang {} in the job block) every group's allocs together are one gang
// (a launcher group and a worker group, say).
type Gang struct {
	// Min is the fewest members the gang may run with (an elastic gang
	// places up to the group counts when there is room, never fewer than
	// Min); 0 means every member.
	Min int `json:"Min,omitempty"`
	// Timeout is how long an unplaced gang waits for room before its
	// placement fails; 0 waits for ever.
	Timeout time.Duration `json:"Timeout,omitempty"`
	// StaleGrace is how long a running gang may stay below Min (members
	// failed or lost) before the whole gang is stopped and placed again;
	// 0 means DefaultGangStaleGrace.
	StaleGrace time.Duration `json:"StaleGrace,omitempty"`
	// Topology packs the members into the fewest network domains of a
	// level (rack, block, ...).
	Topology *Topology `json:"Topology,omitempty"`
}

// DefaultGangStaleGrace is the stale-gang grace period when none is set.
const DefaultGangStaleGrace = 30 * time.Second

// Topology modes.
const (
	// TopologyRequired places the gang only inside one domain of the level.
	TopologyRequired = "required"
	// TopologyPreferred packs into the fewest domains, spilling over when
	// no single domain has room.
	TopologyPreferred = "preferred"
)

// Topology asks for members packed by a network topology level. A node's
// domain at a level is its meta "topology.<level>" (the agent's topology
// block sets those).
type Topology struct {
	Level string `json:"Level"`
	Mode  string `json:"Mode,omitempty"` // required or preferred (default)
}

// TopologyMetaPrefix is the node meta key prefix of topology levels.
const TopologyMetaPrefix = "topology."

// GangOf returns the gang a group belongs to and its ID within the job:
// the job's gang ("job") when the job has one, else the group's own gang
// (the group's name), else nil.
func (j *Job) GangOf(tg *TaskGroup) (*Gang, string) {
	if j.Gang != nil {
		return j.Gang, GangJobWide
	}
	if tg != nil && tg.Gang != nil {
		return tg.Gang, tg.Name
	}
	return nil, ""
}

// GangJobWide is the gang ID of a job-level gang.
const GangJobWide = "job"

// AllocGang is an alloc's place in its gang, set by the scheduler when the
// gang is placed and given to the tasks as DROVER_GANG_* variables and a
// hosts file.
type AllocGang struct {
	// ID names the gang within the job: the group name, or "job".
	ID string `json:"ID"`
	// Size is the number of members placed together; Rank is this one's
	// (0..Size-1; rank 0 is the leader).
	Size int `json:"Size"`
	Rank int `json:"Rank"`
	// LeaderAddr is rank 0's address and reserved port ("10.0.0.5:29500"),
	// usable as MASTER_ADDR:MASTER_PORT for torch.distributed.
	LeaderAddr string `json:"LeaderAddr,omitempty"`
	// Members lists every member of the placement, by rank.
	Members []GangMember `json:"Members,omitempty"`
}

// GangMember is one member of a placed gang.
type GangMember struct {
	Rank    int    `json:"Rank"`
	AllocID string `json:"AllocID"`
	Name    string `json:"Name"` // the alloc name, job.group[index]
	NodeID  string `json:"NodeID"`
	Address string `json:"Address"` // the node's address
}

// GangPortLabel is the dynamic port the scheduler reserves on every gang
// member for the leader's rendezvous (rank 0's is DROVER_GANG_LEADER_ADDR).
const GangPortLabel = "drover_gang"

// PlanGang is one gang's placements in a plan: the applier commits all of
// them or none.
type PlanGang struct {
	JobID    string   `json:"JobID"`
	ID       string   `json:"ID"`
	AllocIDs []string `json:"AllocIDs"`
}

// validateGang checks a job or group gang block.
func (v *validator) gang(p string, g *Gang, count int) {
	if g == nil {
		return
	}
	if g.Min < 0 {
		v.add(p, "gang: min %d must not be negative", g.Min)
	}
	if count >= 0 && g.Min > count {
		v.add(p, "gang: min %d is more than the %d members", g.Min, count)
	}
	if g.Timeout < 0 || g.StaleGrace < 0 {
		v.add(p, "gang: timeout and stale_grace must not be negative")
	}
	if t := g.Topology; t != nil {
		if t.Level == "" {
			v.add(p, "gang: topology: missing level")
		}
		switch t.Mode {
		case "", TopologyRequired, TopologyPreferred:
		default:
			v.add(p, "gang: topology: invalid mode %q (want %q or %q)", t.Mode, TopologyRequired, TopologyPreferred)
		}
	}
}

// validateGangs checks the job's gangs: not on system jobs, one level
// only (a job gang or group gangs), min within the member count.
func (v *validator) gangs(j *Job) {
	system := j.Type == JobTypeSystem || j.Type == JobTypeSysBatch
	total := 0
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		total += tg.Count
		if tg.Gang == nil {
			continue
		}
		p := fmt.Sprintf("group %q: ", tg.Name)
		if j.Gang != nil {
			v.add(p, "gang: the job has a gang block; a group can't have its own")
		}
		if system {
			v.add(p, "gang: %s jobs can't be gangs (they run on every node)", j.Type)
		}
		v.gang(p, tg.Gang, tg.Count)
	}
	if j.Gang != nil {
		if system {
			v.add("", "gang: %s jobs can't be gangs (they run on every node)", j.Type)
		}
		v.gang("", j.Gang, total)
	}
}
