package api

import (
	"context"
	"net/http"
	"time"
)

// DrainReasonSpot is the drain reason of a node whose spot capacity is
// being reclaimed (a provider's notice or `drover node interrupt`): the
// allocs it migrates carry it in their desired description, and the
// client tells their tasks they were interrupted.
const DrainReasonSpot = "spot interruption: node interrupted by its provider"

// MaxInterruptDeadline bounds an interruption notice's deadline.
const MaxInterruptDeadline = 24 * time.Hour

// NodeInterruptRequest is the body of POST /v1/node/{id}/interrupt: the
// node drains with the deadline (its work is migrated by then) and the
// reason DrainReasonSpot.
type NodeInterruptRequest struct {
	NodeID   string        `json:"NodeID"`
	Deadline time.Duration `json:"Deadline"`
}

// InterruptNode tells the cluster that the node is reclaimed in deadline.
func (c *Client) InterruptNode(ctx context.Context, id string, deadline time.Duration) (*NodeUpdateResponse, error) {
	var out NodeUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/node/"+esc(id)+"/interrupt",
		&NodeInterruptRequest{NodeID: id, Deadline: deadline}, &out, nil)
}
