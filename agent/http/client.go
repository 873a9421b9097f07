package http

import (
	"fmt"
	nethttp "net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// headerForwarded marks a request forwarded once, so agents never loop.
const headerForwarded = "X-Drover-Forwarded"

// clientAllocID finds the allocation a /v1/client/... path is about:
// /v1/client/fs/{op}/{alloc} or /v1/client/allocation/{alloc}/...
func clientAllocID(path string) string {
	rest := strings.TrimPrefix(path, "/v1/client/")
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) >= 3 && parts[0] == "fs":
		return parts[2]
	case len(parts) >= 2 && parts[0] == "allocation":
		return parts[1]
	}
	return ""
}

// clientHandlers serve /v1/client/...: on this agent's client, or
// forwarded to the node that holds the allocation.
type clientHandlers struct{ s *HTTPServer }

// serve serves /v1/client/... locally when this agent's client holds the
// allocation (or the path is about the node itself) and otherwise
// forwards it to the HTTP address of the node running the allocation.
func (h *clientHandlers) serve(w nethttp.ResponseWriter, r *nethttp.Request) {
	s := h.s
	if r.URL.Path == "/v1/client/metadata" {
		h.metadata(w, r)
		return
	}
	allocID := clientAllocID(r.URL.Path)
	if allocID == "" && r.URL.Path != "/v1/client/stats" {
		// Only the node's own routes name no alloc: anything else has
		// nothing to be checked against.
		api.WriteError(w, api.Errorf(api.ErrNotFound, "no client endpoint "+r.Method+" "+r.URL.Path))
		return
	}
	// The action's capability in the alloc's own namespace.
	need := acl.CapReadJob
	if c := clientCap(r); c.kind == "namespace" {
		need = c.cap
	}
	var a *api.Allocation // looked up once, when ACLs or forwarding need it
	if aclOf(r) != nil && allocID != "" {
		var err error
		if s.role.State != nil {
			a, err = lookupAllocFor(s.state(nil), nil, r, allocID, need)
		} else {
			err = h.checkLocalAlloc(r, allocID, need)
		}
		if err != nil {
			api.WriteError(w, api.AsError(err))
			return
		}
	}
	local := s.cfg.Client
	if local != nil && (allocID == "" || local.HasAlloc(allocID)) {
		local.Handler().ServeHTTP(w, r)
		return
	}
	if allocID == "" {
		api.WriteError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("%s: this agent does not run the client role", r.URL.Path)))
		return
	}
	if s.role.State == nil || r.Header.Get(headerForwarded) != "" {
		api.WriteError(w, api.AsError(notFound(api.ErrAllocNotFound, "allocation", allocID)))
		return
	}
	if a == nil {
		var err error
		if a, err = lookupAllocFor(s.state(nil), nil, r, allocID, need); err != nil {
			api.WriteError(w, api.AsError(err))
			return
		}
	}
	if local != nil && local.HasAlloc(a.ID) {
		r.URL.Path = strings.Replace(r.URL.Path, "/"+allocID, "/"+a.ID, 1)
		r.URL.RawPath = ""
		local.Handler().ServeHTTP(w, r)
		return
	}
	n, err := s.state(nil).NodeByID(nil, a.NodeID)
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	if n == nil || n.HTTPAddr == "" {
		api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("node %q of allocation %s has no HTTP address", a.NodeID, a.ID)))
		return
	}
	if n.Status == api.NodeStatusDown {
		api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("node %q of allocation %s is down", n.ID, a.ID)))
		return
	}
	r.URL.Path = strings.Replace(r.URL.Path, "/"+allocID, "/"+a.ID, 1)
	r.URL.RawPath = ""
	s.proxyToNode(w, r, n, a.ID)
}

// checkLocalAlloc is a client-only agent's object check: the action's
// capability in the namespace of the alloc as this agent's client holds
// it, whatever the request's ?namespace= says. An alloc it does not hold
// is not found here.
func (h *clientHandlers) checkLocalAlloc(r *nethttp.Request, allocID, need string) error {
	nsOf, ok := h.s.cfg.Client.(allocNamespacer)
	if !ok {
		return notFound(api.ErrAllocNotFound, "allocation", allocID)
	}
	ns, found := nsOf.AllocNamespace(allocID)
	if !found {
		return notFound(api.ErrAllocNotFound, "allocation", allocID)
	}
	return allowObject(r, ns, need)
}

// allocNamespacer is the optional ability of a ClientRole to say the
// namespace of an alloc it holds.
type allocNamespacer interface {
	AllocNamespace(id string) (ns string, ok bool)
}

// proxyToNode forwards r to the node's HTTP address (marked forwarded, so
// the node answers it itself), with the caller's credentials replaced by
// a grant for this one action (grant.go); allocID is the alloc the
// request is about ("" for the node's own routes). The scheme is this
// cluster's (https under TLS), whatever the node's address says.
func (s *HTTPServer) proxyToNode(w nethttp.ResponseWriter, r *nethttp.Request, n *api.Node, allocID string) {
	u, err := s.peerURL(hostOf(n.HTTPAddr))
	if err != nil {
		api.WriteError(w, api.Errorf(api.ErrInternal, fmt.Sprintf("node %q HTTP address %q: %v", n.ID, n.HTTPAddr, err)))
		return
	}
	g := signGrant(n.SecretID, s.grantFor(r, n.ID, allocID))
	proxy := &httputil.ReverseProxy{
		Transport: s.peerTr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			stripCredentials(pr.Out.Header)
			pr.Out.Header.Set(headerClientGrant, g)
			pr.Out.Header.Set(headerForwarded, "1")
		},
		FlushInterval: -1, // stream logs as they come
		ErrorHandler: func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
			api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("forward to node %q at %s: %v", n.ID, n.HTTPAddr, err)))
		},
	}
	proxy.ServeHTTP(w, r)
}

// serverRoute reports whether a path is answered by the server role
// (everything under /v1/ except the agent's own endpoints).
func serverRoute(path string) bool {
	if !strings.HasPrefix(path, "/v1/") {
		return false
	}
	for _, p := range []string{"/v1/client/", "/v1/agent/", "/v1/metrics"} {
		if strings.HasPrefix(path, p) {
			return false
		}
	}
	return true
}

// forwardToServers proxies server API requests of an agent without the
// server role to its servers, trying each in turn when one is unreachable
// (only requests without a body are retried on the next server).
func (s *HTTPServer) forwardToServers(next nethttp.Handler) nethttp.Handler {
	targets := make([]*url.URL, 0, len(s.cfg.Servers))
	for _, addr := range s.cfg.Servers {
		if u, err := s.peerURL(addr); err == nil {
			targets = append(targets, u)
		}
	}
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if !serverRoute(r.URL.Path) || r.Header.Get(headerForwarded) != "" || len(targets) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		r.Pattern = "forward /v1/"
		retry := r.Method == nethttp.MethodGet || r.Method == nethttp.MethodHead
		for i, u := range targets {
			failed := false
			proxy := &httputil.ReverseProxy{
				Transport: s.peerTr,
				Rewrite: func(pr *httputil.ProxyRequest) {
					pr.SetURL(u)
					pr.Out.Header.Set(headerForwarded, "1")
				},
				FlushInterval: -1,
				ErrorHandler: func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
					failed = true
					if !retry || i == len(targets)-1 {
						api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("forward to server %s: %v", u.Host, err)))
					}
				},
			}
			proxy.ServeHTTP(w, r)
			if !failed || !retry {
				return
			}
		}
	})
}
