package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Regions lists the regions the answering agent's servers know (GET
// /v1/regions, as Nomad's): its own and every region federated with it
// over the servers' WAN gossip, sorted. A request with Client.Region (or
// ?region=) set to one of them is forwarded to that region's servers.
func (c *Client) Regions(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.Query(ctx, "/v1/regions", &out, nil)
	return out, err
}

// AgentJoinResponse answers PUT /v1/agent/join.
type AgentJoinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error,omitempty"`
}

// Join makes the answering server join the gossip addresses (host:port):
// in the WAN pool of servers of every region when wan (`drover server
// join`, federation), else in its region's LAN pool. It returns how many
// answered.
func (c *Client) Join(ctx context.Context, addrs []string, wan bool) (int, error) {
	q := url.Values{"address": addrs, "wan": {strconv.FormatBool(wan)}}
	resp, err := c.Raw(ctx, http.MethodPut, "/v1/agent/join", q, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out AgentJoinResponse
	if err := c.decode(resp, &out); err != nil {
		return 0, fmt.Errorf("decode /v1/agent/join: %w", err)
	}
	return out.NumJoined, nil
}
