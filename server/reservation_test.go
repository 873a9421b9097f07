package server

import (
	"context"
	"testing"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// A pending gang's blocked eval carries its reservation (eval JSON); a
// later lower-priority job that would fit in the gang's reserved room
// waits instead of taking it, and once the old work stops the gang
// places and its reservation ends.
func TestGangReservationHoldsBackLowerPriority(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("n1", 1000, 4096))
	old := prioJob("old", 50, 600)
	old.Type = api.JobTypeBatch // batch work ends: the gang can count on its room
	registerJob(t, s, old)
	waitLive(t, s, "old", 1)

	gang := prioJob("gang", 50, 900)
	gang.TaskGroups[0].Gang = &api.Gang{}
	resp := registerJob(t, s, gang)
	e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	if e.BlockedEval == "" {
		t.Fatalf("gang eval %+v: want blocked", e)
	}
	b, err := s.State().EvalByID(nil, e.BlockedEval)
	if err != nil || b == nil || b.Reservation == nil || len(b.Reservation.Nodes) != 1 || b.Reservation.Nodes[0].NodeID != "n1" ||
		b.Reservation.Nodes[0].CPU != 900 {
		t.Fatalf("blocked eval %+v, %v: want a reservation of 900 MHz on n1", b, err)
	}

	small := registerJob(t, s, prioJob("small", 40, 300)) // 400 MHz free now, but 900 are reserved
	if e := waitEvalStatus(t, s, small.EvalID, api.EvalStatusComplete); e.BlockedEval == "" {
		t.Fatalf("small eval %+v: want blocked by the reservation", e)
	}
	if live, _ := liveAllocs(s, nil, "small"); len(live) != 0 {
		t.Fatalf("small placed %d allocs in the gang's reserved room", len(live))
	}

	if _, err := s.Jobs().DeregisterJob(ctx, api.DefaultNamespace, "old", false); err != nil {
		t.Fatal(err)
	}
	waitLive(t, s, "gang", 1)
	waitState(t, s, "the gang's reservation to end", func(ws memdb.WatchSet) (bool, error) {
		rs, err := s.State().Reservations(ws)
		return len(rs) == 0, err
	})
}
