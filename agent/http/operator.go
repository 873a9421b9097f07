package http

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"strconv"

	"github.com/drover/drover/api"
)

// OperatorServer is the optional operator ability of a Server (found by
// type assertion): Raft peers and snapshots.
type OperatorServer interface {
	RaftConfiguration() (*api.RaftConfiguration, error)
	RemoveRaftPeer(ctx context.Context, id, addr string) error
	SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error)
	RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error)
}

// KeyringFunc runs a gossip keyring operation cluster-wide (install,
// use, remove with a base64 key; list).
type KeyringFunc func(ctx context.Context, op, key string) (*api.KeyringResponse, error)

// isSnapshotRestore: the general body limit does not apply to a restore,
// which has its own (Config.SnapshotRestoreMaxBytes).
func isSnapshotRestore(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot" && (r.Method == nethttp.MethodPut || r.Method == nethttp.MethodPost)
}

func (s *HTTPServer) operatorRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/operator/raft/configuration", s.raftConfiguration)
	h("DELETE /v1/operator/raft/peer", s.raftRemovePeer)
	h("GET /v1/operator/snapshot", s.snapshotSave)
	h("PUT /v1/operator/snapshot", s.snapshotRestore)
	h("POST /v1/operator/snapshot", s.snapshotRestore)
	h("GET /v1/agent/keyring/list", s.keyringList)
	h("PUT /v1/agent/force-leave", s.forceLeave)
	h("POST /v1/agent/force-leave", s.forceLeave)
	h("PUT /v1/agent/keyring/{op}", s.keyringOp)
	h("POST /v1/agent/keyring/{op}", s.keyringOp)
	s.schedulerConfigRoutes()
	s.nodePoolRoutes()
	s.namespaceRoutes()
	s.scalingRoutes()
	s.queueRoutes()
	s.serviceRoutes()
	s.identityRoutes()
	s.aclRoutes()
	s.ssoRoutes()
}

func (s *HTTPServer) operator() (OperatorServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	o, ok := s.cfg.Server.(OperatorServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server has no operator endpoints")
	}
	return o, nil
}

func (s *HTTPServer) raftConfiguration(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	o, err := s.operator()
	if err != nil {
		return nil, err
	}
	return o.RaftConfiguration()
}

func (s *HTTPServer) raftRemovePeer(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	o, err := s.operator()
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	if (id == "") == (addr == "") {
		return nil, api.Errorf(api.ErrBadRequest, "give exactly one of ?id= or ?address=")
	}
	if err := o.RemoveRaftPeer(r.Context(), id, addr); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// snapshotSave streams the snapshot file; the index is in X-Drover-Index.
func (s *HTTPServer) snapshotSave(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	o, err := s.operator()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	idx, err := o.SaveSnapshot(r.Context(), &buf)
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(nethttp.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil, errWritten
}

func (s *HTTPServer) snapshotRestore(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	o, err := s.operator()
	if err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, api.Errorf(api.ErrBadRequest, "request body (the snapshot file) required")
	}
	body, classify, err := s.limitedSnapshot(w, r)
	if err != nil {
		return nil, err
	}
	idx, err := o.RestoreSnapshot(r.Context(), body)
	if err != nil {
		return nil, classify(err)
	}
	return &api.SnapshotRestoreResponse{Index: idx}, nil
}

func (s *HTTPServer) keyringList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if s.cfg.Keyring == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	return s.cfg.Keyring(r.Context(), "list", "")
}

func (s *HTTPServer) keyringOp(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if s.cfg.Keyring == nil {
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
	return s.cfg.Keyring(r.Context(), op, req.Key)
}

func (s *HTTPServer) forceLeave(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if s.cfg.ForceLeave == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	node := r.URL.Query().Get("node")
	if node == "" {
		return nil, api.Errorf(api.ErrBadRequest, "?node= (the member name) is required")
	}
	if err := s.cfg.ForceLeave(r.Context(), node); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
