package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// VariablesBackend is the variables side of the server role (reads too:
// only the server can open the sealed items). Errors wrap api sentinels:
// ErrBadRequest for an invalid path or items, ErrCASConflict for a
// check-and-set or lock conflict.
type VariablesBackend interface {
	// ReadVariable is a variable with its items (nil, nil: none).
	ReadVariable(ws memdb.WatchSet, ns, path string) (*api.Variable, error)
	// VariableList is the metadata under prefix in ns ("*": all).
	VariableList(ws memdb.WatchSet, ns, prefix string) ([]*api.VariableMetadata, error)
	// ApplyVariable runs op ("set", "delete", api.VariableLockAcquire ...).
	ApplyVariable(ctx context.Context, op string, v *api.Variable, cas *uint64) (*api.Variable, uint64, error)
}

const tableVariables = "variables"

// variableHandlers serve Nomad's variables API: GET /v1/vars, GET, PUT
// and DELETE /v1/var/{path...} (PUT with ?cas=, ?lock-acquire,
// ?lock-renew, ?lock-release).
type variableHandlers struct {
	s *HTTPServer
	b VariablesBackend
}

// varCap is a variables route's capability: c on the path of the
// request ({path...}) in its namespace.
func varCap(c string) capability { return capability{kind: "variables", cap: c} }

// varListCap is GET /v1/vars: list somewhere in the namespace ("*": in
// some namespace); the items are then filtered by path.
var varListCap = capability{kind: "variables", cap: acl.VarList, list: true}

// allowVariable checks c (as of r) for the variables routes.
func allowVariable(c capability, a *acl.ACL, r *nethttp.Request) bool {
	if c.list {
		return a.AllowVariableAnywhere(reqNamespace(r), c.cap)
	}
	return a.AllowVariable(reqNamespace(r), r.PathValue("path"), c.cap)
}

func (h *variableHandlers) ready() error {
	return h.s.need(h.b != nil, "this server does not store variables")
}

func (h *variableHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	ns, prefix := reqNamespace(r), r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableVariables)
		out, err := h.b.VariableList(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		if a := aclOf(r); a != nil && !a.IsManagement() {
			keep := out[:0]
			for _, m := range out {
				if a.AllowVariable(m.Namespace, m.Path, acl.VarList) {
					keep = append(keep, m)
				}
			}
			out = keep
		}
		out, err = listPage(w, r, out, func(m *api.VariableMetadata) string { return m.Namespace + "/" + m.Path })
		return out, idx, err
	})
}

// get answers a variable with its items; a blocking query waits for a
// change of this variable (its ModifyIndex), or its creation or removal.
func (h *variableHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	ns, path := reqNamespace(r), r.PathValue("path")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		v, err := h.b.ReadVariable(ws, ns, path)
		if err != nil {
			return nil, 0, err
		}
		if v == nil {
			return lazyAnswer(func() (any, error) {
				return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("variable %q not found", path))
			}), maxIndex(st, tableVariables), nil
		}
		return v, v.ModifyIndex, nil
	})
}

// varCAS is ?cas= (nil when absent).
func varCAS(r *nethttp.Request) (*uint64, error) {
	has, n, err := casParam(r)
	if err != nil || !has {
		return nil, err
	}
	return &n, nil
}

// decodeVariable reads a variable's body (at most
// api.MaxVariableBodyBytes, no unknown fields).
func decodeVariable(r *nethttp.Request, w nethttp.ResponseWriter) (*api.Variable, error) {
	var v api.Variable
	if r.Body == nil || r.ContentLength == 0 {
		return &v, nil
	}
	r.Body = nethttp.MaxBytesReader(w, r.Body, api.MaxVariableBodyBytes)
	if err := decodeBody(r, &v); err != nil {
		return nil, err // over the limit: ErrBodyTooLarge (bodyError)
	}
	return &v, nil
}

// put creates, updates or locks a variable. The path is the URL's; a
// body's Path and Namespace must agree with it and the request's.
func (h *variableHandlers) put(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	v, err := decodeVariable(r, w)
	if err != nil {
		return nil, err
	}
	ns, path := reqNamespace(r), r.PathValue("path")
	if v.Path != "" && v.Path != path {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("variable %q in the path, %q in the body", path, v.Path))
	}
	if v.Namespace != "" && v.Namespace != ns {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("namespace %q in the request, %q in the body", ns, v.Namespace))
	}
	v.Path, v.Namespace = path, ns
	cas, err := varCAS(r)
	if err != nil {
		return nil, err
	}
	op := "set"
	q := r.URL.Query()
	for _, o := range []string{api.VariableLockAcquire, api.VariableLockRenew, api.VariableLockRelease} {
		if q.Has(o) {
			if op != "set" {
				return nil, api.Errorf(api.ErrBadRequest, "one lock operation at a time")
			}
			op = o
		}
	}
	if (op == api.VariableLockRenew || op == api.VariableLockRelease) && (v.Lock == nil || v.Lock.ID == "") {
		return nil, api.Errorf(api.ErrBadRequest, op+" needs the lock's ID (Lock.ID in the body)")
	}
	out, idx, err := h.b.ApplyVariable(r.Context(), op, v, cas)
	if err != nil {
		return h.conflict(w, r, err, ns, path)
	}
	h.s.setMeta(w, idx)
	return out, nil
}

func (h *variableHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	ns, path := reqNamespace(r), r.PathValue("path")
	cas, err := varCAS(r)
	if err != nil {
		return nil, err
	}
	v := &api.Variable{Namespace: ns, Path: path}
	if id := r.URL.Query().Get("lock-id"); id != "" {
		v.Lock = &api.VariableLock{ID: id}
	}
	_, idx, err := h.b.ApplyVariable(r.Context(), "delete", v, cas)
	if err != nil {
		return h.conflict(w, r, err, ns, path)
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

// conflictBody is a 409's body: the error, and beside it (as Nomad's
// body) the variable as it is now, its items only for a caller that may
// read them.
type conflictBody struct {
	Error *api.Error `json:"error"`
	*api.Variable
}

// conflict answers err: a check-and-set or lock conflict is a 409 with
// the current variable; any other error is returned as is.
func (h *variableHandlers) conflict(w nethttp.ResponseWriter, r *nethttp.Request, err error, ns, path string) (any, error) {
	if !errors.Is(err, api.ErrCASConflict) {
		return nil, err
	}
	body := conflictBody{Error: api.AsError(err)}
	if cur, rerr := h.b.ReadVariable(nil, ns, path); rerr == nil && cur != nil {
		if a := aclOf(r); a != nil && !a.AllowVariable(ns, path, acl.VarRead) {
			cur.Items = nil
		}
		body.Variable = cur
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(nethttp.StatusConflict)
	_ = json.NewEncoder(w).Encode(body)
	return nil, errWritten
}
