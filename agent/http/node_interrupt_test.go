package http_test

import (
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// POST /v1/node/{id}/interrupt drains the node with the deadline and the
// spot reason; a deadline out of bounds is a 400, an unknown node a 404.
func TestNodeInterruptRoute(t *testing.T) {
	a := newTestAPI(t)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: testNode(nodeID)}, nil)
	a.fails("POST", "/v1/node/"+nodeID+"/interrupt", &api.NodeInterruptRequest{}, 400, "bad_request")
	a.fails("POST", "/v1/node/"+nodeID+"/interrupt", &api.NodeInterruptRequest{Deadline: 48 * time.Hour}, 400, "bad_request")
	a.fails("POST", "/v1/node/nope/interrupt", &api.NodeInterruptRequest{Deadline: time.Minute}, 404, "node_not_found")
	var ur api.NodeUpdateResponse
	a.ok("POST", "/v1/node/"+nodeID+"/interrupt", &api.NodeInterruptRequest{Deadline: 2 * time.Minute}, &ur)
	var got api.Node
	a.ok("GET", "/v1/node/"+nodeID, nil, &got)
	if got.SchedulingEligibility != api.NodeSchedulingIneligible || got.LastDrain == nil || got.LastDrain.Reason != api.DrainReasonSpot {
		t.Errorf("after interrupt: eligibility %q, last drain %+v; want ineligible and a drain with the spot reason", got.SchedulingEligibility, got.LastDrain)
	}
	if got.DrainStrategy != nil && got.DrainStrategy.Deadline != 2*time.Minute {
		t.Errorf("drain deadline %v, want 2m", got.DrainStrategy.Deadline)
	}
}
