package client

import (
	"fmt"
	"maps"
	"net/http"
	"sort"

	"github.com/drover/drover/api"
)

// Limits of dynamic node metadata (drover node meta apply).
const (
	maxMetaKeys     = 512
	maxMetaKeyLen   = 128
	maxMetaValueLen = 1024
)

// mergeMeta is the node's metadata: the static (agent config) keys with
// the dynamic ones applied over them (a nil dynamic value removes the key).
func mergeMeta(static map[string]string, dynamic map[string]*string) map[string]string {
	out := maps.Clone(static)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range dynamic {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// NodeMeta answers GET /v1/client/metadata: the merged, dynamic and
// static metadata of this node.
func (c *Client) NodeMeta() *api.NodeMetaResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &api.NodeMetaResponse{Meta: maps.Clone(c.node.Meta), Dynamic: maps.Clone(c.dynMeta), Static: maps.Clone(c.cfg.Meta)}
}

// ApplyNodeMeta merges change into the dynamic metadata (a nil value
// unsets the key; a static key unset this way stays hidden until set
// again), persists it, updates the node and re-registers it with the
// servers. Nothing changes when the request is invalid.
func (c *Client) ApplyNodeMeta(change map[string]*string) (*api.NodeMetaResponse, error) {
	keys := make([]string, 0, len(change))
	for k := range change {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := change[k]; {
		case k == "":
			return nil, api.Errorf(api.ErrBadRequest, "node metadata: empty key")
		case len(k) > maxMetaKeyLen:
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node metadata: key %.20q... is longer than %d bytes", k, maxMetaKeyLen))
		case v != nil && len(*v) > maxMetaValueLen:
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node metadata: value of %q is longer than %d bytes", k, maxMetaValueLen))
		}
	}
	c.metaMu.Lock() // one apply at a time: read, persist, publish
	defer c.metaMu.Unlock()
	c.mu.Lock()
	dyn := maps.Clone(c.dynMeta)
	c.mu.Unlock()
	if dyn == nil {
		dyn = map[string]*string{}
	}
	for _, k := range keys {
		v := change[k]
		if _, static := c.cfg.Meta[k]; v == nil && !static {
			delete(dyn, k)
			continue
		}
		dyn[k] = v
	}
	if len(dyn) > maxMetaKeys {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node metadata: more than %d dynamic keys", maxMetaKeys))
	}
	if err := c.db.PutNodeMeta(dyn); err != nil {
		return nil, fmt.Errorf("apply node metadata: %w", err)
	}
	c.mu.Lock()
	c.dynMeta = dyn
	n := c.node.Copy()
	n.Meta = mergeMeta(c.cfg.Meta, dyn)
	c.node = n
	c.mu.Unlock()
	c.reregister()
	c.log.Info("node metadata applied", "keys", keys)
	return c.NodeMeta(), nil
}

func (c *Client) handleMetaRead(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, c.NodeMeta())
}

func (c *Client) handleMetaApply(w http.ResponseWriter, r *http.Request) {
	var req api.NodeMetaApplyRequest
	if err := decodeBody(r, &req); err != nil {
		api.WriteError(w, restError(err))
		return
	}
	if req.NodeID != "" && req.NodeID != c.NodeID() {
		api.WriteError(w, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node metadata: this is node %s, not %s", c.NodeID(), req.NodeID)))
		return
	}
	resp, err := c.ApplyNodeMeta(req.Meta)
	if err != nil {
		api.WriteError(w, restError(err))
		return
	}
	writeJSON(w, resp)
}
