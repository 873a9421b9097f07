package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// ACLResolver turns a request's secret into its ACL (server.ACL).
type ACLResolver interface {
	ACLEnabled() bool
	ResolveToken(secret string) (*acl.ACL, *api.ACLToken, error)
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

// enforce checks c before h when ACLs are on; the handler sees the
// request's ACL and the route's capability (aclOf, checkObject). Every
// route of the table is registered behind it (routes.go).
func (s *HTTPServer) enforce(c capability, h nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		res := s.cfg.ACL
		if c.public || res == nil || !res.ACLEnabled() {
			h.ServeHTTP(w, r)
			return
		}
		if c.kind == "register" {
			// A node's credential is its introduction (a token in the body
			// or a client certificate) or, registering again, its own
			// secret: the server checks them (RegisterNode), not ACLs.
			h.ServeHTTP(w, r)
			return
		}
		if c.kind == "client" && r.Header.Get(headerClientGrant) != "" {
			// A server forwarding a user's request: it checked the user's
			// token and sends a grant for this alloc and action instead.
			if err := s.verifyGrant(r); err != nil {
				api.WriteError(w, api.AsError(err))
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		a, _, err := res.ResolveToken(tokenOf(r))
		if err != nil {
			api.WriteError(w, api.AsError(err))
			return
		}
		need := c.of(r)
		if !s.allow(need, a, r) {
			api.WriteError(w, api.Errorf(api.ErrPermissionDenied, "Permission denied: "+need.String()))
			return
		}
		h.ServeHTTP(w, r.WithContext(withACL(r.Context(), a, need)))
	})
}

// capability is what a route needs.
type capability struct {
	public bool
	// kind: namespace, node, agent, operator, management, token (any
	// valid token), self (the node's own secret, for the node of the
	// path's {id}), register (a node's introduction: checked by the
	// server), client and nodesub (decided per request: of).
	kind  string
	cap   string // namespace capability, or "" for level kinds
	write bool
	list  bool // a list: namespace=* filtered per item (visible)
	// nodeReads lets a node's secret make this namespace read in the
	// namespaces of the live allocs on that node (its templates' service
	// lookups), and nowhere else.
	nodeReads bool
}

func (c capability) String() string {
	switch c.kind {
	case "namespace":
		return "namespace capability " + c.cap
	case "management":
		return "a management token"
	case "variables":
		return "variables capability " + c.cap
	case "token":
		return "a valid token"
	case "self":
		return "the secret of the node in the path"
	}
	lvl := "read"
	if c.write {
		lvl = "write"
	}
	return c.kind + " " + lvl
}

// of is the capability r needs: c itself, or for the kinds decided per
// request (client, nodesub) the one the request's path and method ask.
func (c capability) of(r *nethttp.Request) capability {
	switch c.kind {
	case "defrag":
		if dry, _ := strconv.ParseBool(r.URL.Query().Get("dry_run")); dry {
			return opRead
		}
		return opWrite
	case "client":
		return clientCap(r)
	case "nodesub":
		if sub := r.PathValue("sub"); sub == "client-allocs" || sub == "client-mig" {
			return self
		}
		return nodeRead
	}
	return c
}

// allow checks a against c (as of r); namespace capabilities are checked in the request's
// namespace ("*" needs the capability in a "*" rule, except on lists,
// which need it somewhere and show only the items of namespaces that have
// it: lists never leak across namespaces). A node's ACL passes only its
// own routes (self) and, where the route allows it, reads in the
// namespaces its allocs run in.
func (s *HTTPServer) allow(c capability, a *acl.ACL, r *nethttp.Request) bool {
	if node := a.NodeID(); node != "" {
		switch c.kind {
		case "self":
			return node == r.PathValue("id")
		case "namespace":
			return c.nodeReads && s.nodeRunsIn(node, reqNamespace(r))
		}
		return false
	}
	switch c.kind {
	case "namespace":
		if c.list && reqNamespace(r) == allNamespaces {
			return a.AllowAnyNamespace(c.cap)
		}
		return a.AllowNamespace(reqNamespace(r), c.cap)
	case "node":
		return a.AllowNode(c.write)
	case "agent":
		return a.AllowAgent(c.write)
	case "operator":
		return a.AllowOperator(c.write)
	case "management":
		return a.IsManagement()
	case "variables":
		return allowVariable(c, a, r)
	case "token":
		return tokenOf(r) != "" // a valid token (resolved already), not anonymous
	}
	return false // self: a node's secret only
}

// nodeRunsIn reports whether the node holds a live alloc in namespace ns
// (only a server knows; a client-only agent forwards such reads).
func (s *HTTPServer) nodeRunsIn(nodeID, ns string) bool {
	if s.role.State == nil {
		return false
	}
	allocs, err := s.state(nil).AllocsByNode(nil, nodeID)
	if err != nil {
		return false
	}
	for _, a := range allocs {
		if a.Namespace == ns && !a.TerminalStatus() {
			return true
		}
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
		return nodeWrite
	}
	return nodeRead
}

func reqNamespace(r *nethttp.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

func ns(c string) capability                   { return capability{kind: "namespace", cap: c} }
func nodeReadable(c string) capability         { return capability{kind: "namespace", cap: c, nodeReads: true} }
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
	// self is a node's own route: its secret, for its {id} only.
	self = capability{kind: "self"}
	// nodeRegister is a node's registration (its credential is checked by
	// the server: an introduction, a client certificate or its secret).
	nodeRegister = capability{kind: "register"}
	// nodeSub is GET /v1/node/{id}/{sub}: allocations (node read, each
	// alloc in a namespace the token reads), client-allocs or client-mig
	// (self).
	nodeSub = capability{kind: "nodesub"}
	// client is /v1/client/...: the capability of the action (clientCap).
	client = capability{kind: "client"}
	// opDefrag is POST /v1/operator/defrag: operator read for a dry run
	// (?dry_run=true), operator write otherwise.
	opDefrag = capability{kind: "defrag"}
)

type aclKey struct{}

// authz is what enforce found: the request's ACL and the capability of
// its route (as of r).
type authz struct {
	acl *acl.ACL
	cap capability
}

func withACL(ctx context.Context, a *acl.ACL, c capability) context.Context {
	return context.WithValue(ctx, aclKey{}, &authz{acl: a, cap: c})
}

// aclOf is the request's ACL (nil when ACLs are off, or for a request a
// grant authorizes).
func aclOf(r *nethttp.Request) *acl.ACL {
	if z, _ := r.Context().Value(aclKey{}).(*authz); z != nil {
		return z.acl
	}
	return nil
}

// routeNSCap is the namespace capability of the request's route (read-job
// for routes of other kinds).
func routeNSCap(r *nethttp.Request) string {
	if z, _ := r.Context().Value(aclKey{}).(*authz); z != nil && z.cap.kind == "namespace" {
		return z.cap.cap
	}
	return acl.CapReadJob
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

// checkObject checks the route's namespace capability in the namespace of
// the object it serves by ID (an alloc, an eval, a deployment, a scaling
// policy, ...), whatever the request's ?namespace= says: every handler
// that serves an object by ID calls it (or allowObject, for an action
// that needs another capability) before answering or acting.
func checkObject(r *nethttp.Request, namespace string) error {
	return allowObject(r, namespace, routeNSCap(r))
}

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

// allowQueue checks that the request's ACL may run jobs in job's queue
// (its own, else its namespace's default queue, else default): queue
// write, as the queue rules of ACL policies say (acl.AllowQueue).
func (s *HTTPServer) allowQueue(r *nethttp.Request, job *api.Job) error {
	a := aclOf(r)
	if a == nil || job == nil {
		return nil
	}
	q := job.Queue
	if q == "" {
		q = api.DefaultQueue
		if s.role.State != nil {
			if n, _ := s.state(nil).NamespaceByName(nil, job.Namespace); n != nil && n.Queue != "" {
				q = n.Queue
			}
		}
	}
	if !a.AllowQueue(q, true) {
		return api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: queue %q (a policy's queue %q { policy = \"write\" })", q, q))
	}
	return nil
}

// allowStoredJobQueue is allowQueue for a verb on a stored job (dispatch,
// force, scale): nothing to check when the job does not exist (the
// server says so).
func (s *HTTPServer) allowStoredJobQueue(r *nethttp.Request, ns, id string) error {
	if aclOf(r) == nil || s.role.State == nil {
		return nil
	}
	job, err := s.state(nil).JobByID(nil, ns, id)
	if err != nil || job == nil {
		return err
	}
	return s.allowQueue(r, job)
}
