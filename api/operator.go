package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// KeyringRequest is the body of PUT /v1/agent/keyring/{install,use,remove}.
type KeyringRequest struct {
	Key string `json:"Key"` // base64, 16, 24 or 32 bytes
}

// KeyringResponse aggregates every server's answer to a keyring operation.
type KeyringResponse struct {
	Messages    map[string]string `json:"Messages"`    // member -> error
	Keys        map[string]int    `json:"Keys"`        // key -> members holding it
	PrimaryKeys map[string]int    `json:"PrimaryKeys"` // key -> members encrypting with it
	NumNodes    int               `json:"NumNodes"`
	NumResp     int               `json:"NumResp"`
	NumErr      int               `json:"NumErr"`
}

// SnapshotRestoreResponse answers PUT /v1/operator/snapshot.
type SnapshotRestoreResponse struct {
	Index uint64 `json:"Index"` // Raft index after the restore
}

// RaftConfiguration reads the Raft peers (GET /v1/operator/raft/configuration).
func (c *Client) RaftConfiguration(ctx context.Context, o *QueryOptions) (*RaftConfiguration, error) {
	var out RaftConfiguration
	_, err := c.Query(ctx, "/v1/operator/raft/configuration", &out, o)
	return &out, err
}

// RemoveRaftPeer removes a Raft peer by ID or by address (one of them).
func (c *Client) RemoveRaftPeer(ctx context.Context, id, address string) error {
	q := url.Values{}
	if id != "" {
		q.Set("id", id)
	}
	if address != "" {
		q.Set("address", address)
	}
	resp, err := c.Raw(ctx, http.MethodDelete, "/v1/operator/raft/peer", q, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// SnapshotSave streams a snapshot of the whole state (from the leader,
// or from the server asked with o.AllowStale). The caller closes it.
func (c *Client) SnapshotSave(ctx context.Context, o *QueryOptions) (io.ReadCloser, error) {
	resp, err := c.Raw(ctx, http.MethodGet, "/v1/operator/snapshot", o.values(), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// SnapshotRestore replaces the cluster's state with a saved snapshot.
func (c *Client) SnapshotRestore(ctx context.Context, r io.Reader) (*SnapshotRestoreResponse, error) {
	var out SnapshotRestoreResponse
	err := c.Write(ctx, http.MethodPut, "/v1/operator/snapshot", r, &out, nil)
	return &out, err
}

// KeyringOperation runs op ("install", "use", "remove" with a key; "list")
// on every server's gossip keyring.
func (c *Client) KeyringOperation(ctx context.Context, op, key string) (*KeyringResponse, error) {
	var out KeyringResponse
	if op == "list" {
		_, err := c.Query(ctx, "/v1/agent/keyring/list", &out, nil)
		return &out, err
	}
	err := c.Write(ctx, http.MethodPut, "/v1/agent/keyring/"+url.PathEscape(op), &KeyringRequest{Key: key}, &out, nil)
	return &out, err
}

// ForceLeave marks a failed server as left in gossip (PUT
// /v1/agent/force-leave?node=NAME): its Raft peer is removed at once.
func (c *Client) ForceLeave(ctx context.Context, node string) error {
	return c.Write(ctx, http.MethodPut, "/v1/agent/force-leave", nil, nil, &WriteOptions{Params: map[string]string{"node": node}})
}
