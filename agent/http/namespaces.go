package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// NamespaceState is the optional namespace read side of State.
type NamespaceState interface {
	Namespaces(ws memdb.WatchSet, prefix string) ([]*api.Namespace, error)
	NamespaceByName(ws memdb.WatchSet, name string) (*api.Namespace, error)
}

// NamespaceServer is the optional namespace write side of Server. Errors
// wrap api sentinels (ErrBadRequest for an invalid or busy namespace,
// ErrNotFound for an unknown one).
type NamespaceServer interface {
	UpsertNamespaces(ctx context.Context, nss []*api.Namespace) (uint64, error)
	DeleteNamespace(ctx context.Context, name string) (uint64, error)
}

const tableNamespaces = "namespaces"

// namespaceRoutes are Nomad's: GET /v1/namespaces, GET, POST/PUT and
// DELETE /v1/namespace/{name}, POST/PUT /v1/namespace (name in the body).
func (s *HTTPServer) namespaceRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/namespaces", s.namespaceList)
	h("GET /v1/namespace/{name}", s.namespaceGet)
	for _, m := range []string{"PUT", "POST"} {
		h(m+" /v1/namespace", s.namespaceUpsert)
		h(m+" /v1/namespace/{name}", s.namespaceUpsert)
	}
	h("DELETE /v1/namespace/{name}", s.namespaceDelete)
}

func (s *HTTPServer) namespaceState() (NamespaceState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	st, ok := s.cfg.State.(NamespaceState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "namespaces are not available on this agent")
	}
	return st, nil
}

func (s *HTTPServer) namespaceServer() (NamespaceServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	ns, ok := s.cfg.Server.(NamespaceServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot change namespaces")
	}
	return ns, nil
}

func (s *HTTPServer) namespaceList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.namespaceState()
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(tableNamespaces)
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

func (s *HTTPServer) namespaceGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.namespaceState()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.NamespaceVisible(name) {
		// As the list: a namespace the token may not use is not shown.
		return nil, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: namespace %q", name))
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		n, err := st.NamespaceByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if n == nil {
			return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("namespace %q not found", name))
		}
		return n, s.maxIndex(tableNamespaces), nil
	})
}

// namespaceUpsert takes one namespace; a name in the path must match the
// body's (or fills it).
func (s *HTTPServer) namespaceUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, err := s.namespaceServer()
	if err != nil {
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
	idx, err := ns.UpsertNamespaces(r.Context(), []*api.Namespace{&n})
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) namespaceDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, err := s.namespaceServer()
	if err != nil {
		return nil, err
	}
	idx, err := ns.DeleteNamespace(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}
