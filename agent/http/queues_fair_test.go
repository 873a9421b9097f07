package http

import (
	"testing"

	"github.com/drover/drover/api"
)

type fairServer struct {
	QueuesBackend
	shares map[string]*api.QueueResources
}

func (f fairServer) QueueFairShare(name string) *api.QueueResources { return f.shares[name] }

// Queue status carries the server's fair share, on a copy (the state's
// object is shared); servers without one leave it empty.
func TestQueueStatusWithFairShare(t *testing.T) {
	q := &api.QueueStatus{Queue: &api.Queue{Name: "team-a"}}
	s := &queueHandlers{b: fairServer{shares: map[string]*api.QueueResources{"team-a": {GPUs: 6}}}}
	got := s.withFairShare(q)
	if got.FairShare == nil || got.FairShare.GPUs != 6 || q.FairShare != nil {
		t.Errorf("with fair share: %+v (original %+v)", got.FairShare, q.FairShare)
	}
	plain := &queueHandlers{}
	if got := plain.withFairShare(q); got != q || got.FairShare != nil {
		t.Errorf("without a fair-share server: %+v", got)
	}
}
