package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"

	"github.com/drover/drover/api"
)

// nodeIdentifier is the optional ability of a ClientRole to name its node.
type nodeIdentifier interface{ NodeID() string }

// metadata serves GET and POST /v1/client/metadata (Nomad's dynamic node
// metadata) on this agent's client when the request names no node or
// this one (?node_id=, or NodeID in the POST body), and otherwise
// forwards it to the named node's HTTP address.
func (h *clientHandlers) metadata(w nethttp.ResponseWriter, r *nethttp.Request) {
	s := h.s
	nodeID := r.URL.Query().Get("node_id")
	if r.Method == nethttp.MethodPost || r.Method == nethttp.MethodPut {
		body, err := io.ReadAll(r.Body) // bounded by the body limit middleware
		if err != nil {
			api.WriteError(w, api.AsError(fmt.Errorf("read body: %w", api.Errorf(api.ErrBadRequest, err.Error()))))
			return
		}
		var req api.NodeMetaApplyRequest
		if err := json.Unmarshal(body, &req); err != nil {
			api.WriteError(w, api.Errorf(api.ErrBadRequest, "invalid JSON body: "+err.Error()))
			return
		}
		if req.NodeID != "" {
			if nodeID != "" && nodeID != req.NodeID {
				api.WriteError(w, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node_id %q and body NodeID %q differ", nodeID, req.NodeID)))
				return
			}
			nodeID = req.NodeID
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	local := s.cfg.Client
	if local != nil {
		if ni, ok := local.(nodeIdentifier); nodeID == "" || ok && ni.NodeID() == nodeID {
			local.Handler().ServeHTTP(w, r)
			return
		}
	}
	if nodeID == "" {
		api.WriteError(w, api.Errorf(api.ErrBadRequest, "this agent does not run the client role: name a node with node_id"))
		return
	}
	if s.role.State == nil || r.Header.Get(headerForwarded) != "" {
		api.WriteError(w, api.Errorf(api.ErrNodeNotFound, fmt.Sprintf("node %q not found", nodeID)))
		return
	}
	n, err := s.state(nil).NodeByID(nil, nodeID)
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	switch {
	case n == nil:
		api.WriteError(w, api.Errorf(api.ErrNodeNotFound, fmt.Sprintf("node %q not found", nodeID)))
	case n.HTTPAddr == "":
		api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("node %q has no HTTP address", n.ID)))
	case n.Status == api.NodeStatusDown:
		api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("node %q is down", n.ID)))
	default:
		s.proxyToNode(w, r, n, "")
	}
}
