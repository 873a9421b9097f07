package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// ACLResolver turns a request's secret into its ACL (server.Server).
type ACLResolver interface {
	ACLEnabled() bool
	ResolveToken(secret string) (*acl.ACL, *api.ACLToken, error)
}

// aclMux is the routes' ServeMux: every route is registered with the
// capability it needs (routeCaps, by pattern); registering one that has
// none is a programming error and panics, so a test that starts the
// server fails when a new route forgets to declare it.
type aclMux struct {
	*nethttp.ServeMux
	s *HTTPServer
}

func (m *aclMux) HandleFunc(pattern string, f func(nethttp.ResponseWriter, *nethttp.Request)) {
	m.Handle(pattern, nethttp.HandlerFunc(f))
}

func (m *aclMux) Handle(pattern string, h nethttp.Handler) {
	c, ok := routeCaps[pattern]
	if !ok {
		panic(fmt.Sprintf("http route %q declares no ACL capability (add it to routeCaps)", pattern))
	}
	m.ServeMux.Handle(pattern, m.s.enforce(c, h))
}

// tokenOf is the request's secret: X-Drover-Token, X-Nomad-Token or
// Authorization: Bearer, else a client's node secret.
func tokenOf(r *nethttp.Request) string {
	for _, h := range []string{api.HeaderToken, "X-Nomad-Token"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	if v := r.Header.Get(api.NodeSecretHeader); v != "" {
		return v
	}
	// A browser cannot set headers on a websocket: the UI offers the
	// token as a subprotocol (as Kubernetes' bearer subprotocol).
	for _, list := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(list, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), api.WebSocketTokenProtocol); ok {
				return v
			}
		}
	}
	return ""
}

// enforce checks c before h when ACLs are on.
func (s *HTTPServer) enforce(c capability, h nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		res := s.cfg.ACL
		if c.public || res == nil || !res.ACLEnabled() {
			h.ServeHTTP(w, r)
			return
		}
		a, _, err := res.ResolveToken(tokenOf(r))
		if err != nil && c.kind == "register" && r.Header.Get(api.HeaderToken) == "" && r.Header.Get(api.NodeSecretHeader) != "" {
			// A client registering its node for the first time: its secret
			// is not known yet; the server refuses a secret that does not
			// match an existing node.
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			writeError(w, api.AsError(err))
			return
		}
		if !c.allow(a, r) {
			writeError(w, api.Errorf(api.ErrPermissionDenied, "Permission denied: "+c.String()))
			return
		}
		h.ServeHTTP(w, r.WithContext(withACL(r.Context(), a)))
	})
}

// capability is what a route needs.
type capability struct {
	public bool
	kind   string // namespace, node, agent, operator, management, token, client
	cap    string // namespace capability, or "" for level kinds
	write  bool
	list   bool // a list: namespace=* filtered per item (visible)
}

func (c capability) String() string {
	switch c.kind {
	case "namespace":
		return "namespace capability " + c.cap
	case "management":
		return "a management token"
	case "token":
		return "a valid token"
	case "client":
		return "client routes need the capability of their action"
	}
	lvl := "read"
	if c.write {
		lvl = "write"
	}
	return c.kind + " " + lvl
}

// allow checks a; namespace capabilities are checked in the request's
// namespace ("*" needs the capability in a "*" rule, except on lists,
// which need it somewhere and show only the items of namespaces that have
// it: lists never leak across namespaces).
func (c capability) allow(a *acl.ACL, r *nethttp.Request) bool {
	switch c.kind {
	case "namespace":
		if c.list && reqNamespace(r) == allNamespaces {
			return a.AllowAnyNamespace(c.cap)
		}
		return a.AllowNamespace(reqNamespace(r), c.cap)
	case "node", "register":
		return a.AllowNode(c.write)
	case "agent":
		return a.AllowAgent(c.write)
	case "operator":
		return a.AllowOperator(c.write)
	case "management":
		return a.IsManagement()
	case "token":
		return tokenOf(r) != "" // a valid token (resolved already), not anonymous
	case "client":
		return clientCap(r).allow(a, r)
	}
	return false
}

// clientCap is the capability of a /v1/client/ route.
func clientCap(r *nethttp.Request) capability {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1/client/fs/logs/"):
		return ns(acl.CapReadLogs)
	case strings.HasPrefix(p, "/v1/client/fs/"):
		return ns(acl.CapReadFS)
	case strings.HasSuffix(p, "/exec"):
		return ns(acl.CapAllocExec)
	case strings.HasSuffix(p, "/restart"), strings.HasSuffix(p, "/signal"):
		return ns(acl.CapAllocLifecycle)
	case strings.HasPrefix(p, "/v1/client/allocation/"):
		return ns(acl.CapReadJob)
	case p == "/v1/client/metadata" && r.Method != nethttp.MethodGet:
		return capability{kind: "node", write: true}
	}
	return capability{kind: "node"}
}

func reqNamespace(r *nethttp.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

func ns(c string) capability                   { return capability{kind: "namespace", cap: c} }
func nsList(c string) capability               { return capability{kind: "namespace", cap: c, list: true} }
func level(kind string, write bool) capability { return capability{kind: kind, write: write} }

var (
	public     = capability{public: true}
	nodeRead   = level("node", false)
	nodeWrite  = level("node", true)
	agentRead  = level("agent", false)
	agentWrite = level("agent", true)
	opRead     = level("operator", false)
	opWrite    = level("operator", true)
	management = capability{kind: "management"}
	anyToken   = capability{kind: "token"}
	// nodeRegister is node write, or a client's first registration with its node secret.
	nodeRegister = capability{kind: "register", write: true}
)

type aclKey struct{}

func withACL(ctx context.Context, a *acl.ACL) context.Context {
	return context.WithValue(ctx, aclKey{}, a)
}

// aclOf is the request's ACL (nil when ACLs are off).
func aclOf(r *nethttp.Request) *acl.ACL {
	a, _ := r.Context().Value(aclKey{}).(*acl.ACL)
	return a
}

// visible keeps the items of namespaces in which the request's ACL holds
// c (all of them when ACLs are off): a list with namespace=* shows a token
// only what it may see.
func visible[T any](r *nethttp.Request, items []T, nsOf func(T) string, c string) []T {
	a := aclOf(r)
	if a == nil || a.IsManagement() {
		return items
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if a.AllowNamespace(nsOf(it), c) {
			out = append(out, it)
		}
	}
	return out
}

func jobNamespace(j *api.Job) string { return j.Namespace }

// allowObject checks a namespace capability on an object's own namespace
// (a job body's, an alloc's): nothing to check when ACLs are off.
func allowObject(r *nethttp.Request, namespace, c string) error {
	a := aclOf(r)
	if a == nil {
		return nil
	}
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	if !a.AllowNamespace(namespace, c) {
		return api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: namespace %q capability %s", namespace, c))
	}
	return nil
}
