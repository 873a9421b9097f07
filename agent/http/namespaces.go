package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// NamespaceState is the namespace read side of Store.
type NamespaceState interface {
	Namespaces(ws memdb.WatchSet, prefix string) ([]*api.Namespace, error)
	NamespaceByName(ws memdb.WatchSet, name string) (*api.Namespace, error)
}

// NamespacesBackend is the namespace write side of the server role.
// Errors wrap api sentinels (ErrBadRequest for an invalid or busy
// namespace, ErrNotFound for an unknown one).
type NamespacesBackend interface {
	UpsertNamespaces(ctx context.Context, nss []*api.Namespace) (uint64, error)
	DeleteNamespace(ctx context.Context, name string) (uint64, error)
}

const tableNamespaces = "namespaces"

// namespaceHandlers serve Nomad's namespace routes: GET /v1/namespaces,
// GET, POST/PUT and DELETE /v1/namespace/{name}, POST/PUT /v1/namespace
// (name in the body).
type namespaceHandlers struct {
	s *HTTPServer
	b NamespacesBackend
}

func (h *namespaceHandlers) ready() error {
	return h.s.need(h.b != nil, "this server cannot change namespaces")
}

func (h *namespaceHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	prefix := r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, tableNamespaces)
		out, err := st.Namespaces(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		if a := aclOf(r); a != nil {
			out = slices.DeleteFunc(out, func(n *api.Namespace) bool { return !a.NamespaceVisible(n.Name) })
		}
		out, err = listPage(w, r, out, func(n *api.Namespace) string { return n.Name })
		return out, idx, err
	})
}

func (h *namespaceHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.role.State == nil {
		return nil, errNoServer()
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.NamespaceVisible(name) {
		// As the list: a namespace the token may not use is not shown.
		return nil, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: namespace %q", name))
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		n, err := st.NamespaceByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if n == nil {
			return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("namespace %q not found", name))
		}
		return n, maxIndex(st, tableNamespaces), nil
	})
}

// upsert takes one namespace; a name in the path must match the body's
// (or fills it).
func (h *namespaceHandlers) upsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var n api.Namespace
	if err := decodeBody(r, &n); err != nil {
		return nil, err
	}
	if p := r.PathValue("name"); p != "" {
		if n.Name == "" {
			n.Name = p
		} else if n.Name != p {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("namespace %q in the path, %q in the body", p, n.Name))
		}
	}
	idx, err := h.b.UpsertNamespaces(r.Context(), []*api.Namespace{&n})
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

func (h *namespaceHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteNamespace(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}
