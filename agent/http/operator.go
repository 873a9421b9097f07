package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"strconv"

	"github.com/drover/drover/api"
)

// OperatorBackend is the operator side of the server role: Raft peers,
// snapshots and garbage collection.
type OperatorBackend interface {
	RaftConfiguration() (*api.RaftConfiguration, error)
	RemoveRaftPeer(ctx context.Context, id, addr string) error
	SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error)
	RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error)
	// SystemGC collects what is eligible now and says how much.
	SystemGC(ctx context.Context) (int, error)
}

// KeyringFunc runs a gossip keyring operation cluster-wide (install,
// use, remove with a base64 key; list).
type KeyringFunc func(ctx context.Context, op, key string) (*api.KeyringResponse, error)

// isSnapshotRestore: the general body limit does not apply to a restore,
// which has its own (Config.SnapshotRestoreMaxBytes).
func isSnapshotRestore(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot" && (r.Method == nethttp.MethodPut || r.Method == nethttp.MethodPost)
}

// operatorHandlers serve /v1/operator/raft and snapshot, system GC, and
// the agent's gossip keyring and force-leave (Config.Keyring,
// Config.ForceLeave).
type operatorHandlers struct {
	s *HTTPServer
	b OperatorBackend
}

func (h *operatorHandlers) ready() error {
	return h.s.need(h.b != nil, "this server has no operator endpoints")
}

func (h *operatorHandlers) raftConfiguration(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.b.RaftConfiguration()
}

func (h *operatorHandlers) raftRemovePeer(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	if (id == "") == (addr == "") {
		return nil, api.Errorf(api.ErrBadRequest, "give exactly one of ?id= or ?address=")
	}
	if err := h.b.RemoveRaftPeer(r.Context(), id, addr); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// snapshotSave streams the snapshot file; the index is in X-Drover-Index.
func (h *operatorHandlers) snapshotSave(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	idx, err := h.b.SaveSnapshot(r.Context(), &buf)
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(nethttp.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil, errWritten
}

func (h *operatorHandlers) snapshotRestore(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, api.Errorf(api.ErrBadRequest, "request body (the snapshot file) required")
	}
	body, classify, err := h.limitedSnapshot(w, r)
	if err != nil {
		return nil, err
	}
	idx, err := h.b.RestoreSnapshot(r.Context(), body)
	if err != nil {
		return nil, classify(err)
	}
	return &api.SnapshotRestoreResponse{Index: idx}, nil
}

func (h *operatorHandlers) keyringList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.Keyring == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	return h.s.cfg.Keyring(r.Context(), "list", "")
}

func (h *operatorHandlers) keyringOp(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.Keyring == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	op := r.PathValue("op")
	switch op {
	case "install", "use", "remove":
	default:
		return nil, api.Errorf(api.ErrNotFound, "unknown keyring operation "+strconv.Quote(op)+" (install, use, remove, list)")
	}
	var req api.KeyringRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Key == "" {
		return nil, api.Errorf(api.ErrBadRequest, "Key is required")
	}
	return h.s.cfg.Keyring(r.Context(), op, req.Key)
}

func (h *operatorHandlers) forceLeave(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.ForceLeave == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	node := r.URL.Query().Get("node")
	if node == "" {
		return nil, api.Errorf(api.ErrBadRequest, "?node= (the member name) is required")
	}
	if err := h.s.cfg.ForceLeave(r.Context(), node); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (h *operatorHandlers) systemGC(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	if _, err := h.b.SystemGC(r.Context()); err != nil {
		return nil, fmt.Errorf("system gc: %w", err)
	}
	return struct{}{}, nil
}
