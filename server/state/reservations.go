package state

import (
	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// holdsReservation indexes the evals whose reservation is active: blocked
// ones that carry one (the "reservation" index of the evals table).
func holdsReservation(raw any) (bool, error) {
	e, ok := raw.(*api.Evaluation)
	return ok && e.Status == api.EvalStatusBlocked && e.Reservation != nil, nil
}

// Reservations returns the active reservations (an index lookup): those
// of blocked evals whose job still exists and is not stopped, the newest
// eval's for a job with several. Shared objects: do not modify.
func (r *reads) Reservations(ws memdb.WatchSet) ([]*api.Reservation, error) {
	evals, err := list[api.Evaluation](r, ws, nil, TableEvals, "reservation", true)
	if err != nil {
		return nil, err
	}
	newest := map[api.NamespacedID]*api.Evaluation{}
	for _, e := range evals {
		k := api.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		if cur := newest[k]; cur == nil || e.CreateIndex > cur.CreateIndex {
			newest[k] = e
		}
	}
	out := make([]*api.Reservation, 0, len(newest))
	for k, e := range newest {
		j, err := r.JobByID(nil, k.Namespace, k.ID)
		if err != nil {
			return nil, err
		}
		if j == nil || j.Stop {
			continue
		}
		out = append(out, e.Reservation)
	}
	return out, nil
}
