package api

import "testing"

// The list forms carry what the UI's job list and gang views read: an
// alloc's place in its gang (without the member list, which each
// member's own stub repeats) and a job's queue.
func TestStubsCarryGangAndQueue(t *testing.T) {
	a := &Allocation{ID: "a1", Gang: &AllocGang{ID: "workers", Size: 2, Rank: 1, LeaderAddr: "10.0.0.5:29500",
		Members: []GangMember{{Rank: 0, AllocID: "a0"}, {Rank: 1, AllocID: "a1"}}}}
	s := a.Stub()
	if s.Gang == nil || s.Gang.ID != "workers" || s.Gang.Size != 2 || s.Gang.Rank != 1 || s.Gang.LeaderAddr != "10.0.0.5:29500" {
		t.Fatalf("stub gang = %+v, want workers rank 1 of 2, leader 10.0.0.5:29500", s.Gang)
	}
	if s.Gang.Members != nil {
		t.Errorf("stub gang lists %d members, want none", len(s.Gang.Members))
	}
	if len(a.Gang.Members) != 2 {
		t.Errorf("Stub changed the alloc's own members: %d left", len(a.Gang.Members))
	}
	if (&Allocation{ID: "a2"}).Stub().Gang != nil {
		t.Error("an alloc outside a gang has a stub gang")
	}
	if q := (&Job{ID: "j", Queue: "team-a"}).Stub(nil).Queue; q != "team-a" {
		t.Errorf("job stub queue = %q, want team-a", q)
	}
}
