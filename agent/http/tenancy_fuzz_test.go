package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// staticACL resolves a fixed set of secrets (ACLs on).
type staticACL map[string]*acl.ACL

func (s staticACL) ACLEnabled() bool { return true }
func (s staticACL) ResolveToken(secret string) (*acl.ACL, *api.ACLToken, error) {
	if a, ok := s[secret]; ok {
		return a, nil, nil
	}
	return nil, nil, api.Errorf(api.ErrPermissionDenied, "ACL token not found")
}

// registrar is a Server that only registers nodes: with intro "good", or
// when introduced by certificate.
type registrar struct {
	NodesBackend
	got *api.Node
}

func (r *registrar) RegisterNode(_ context.Context, n *api.Node, intro api.NodeIntro) (*api.NodeRegisterResponse, error) {
	if intro.Token != "good" && !intro.Certified {
		return nil, api.Errorf(api.ErrPermissionDenied, "no introduction")
	}
	r.got = n
	return &api.NodeRegisterResponse{Index: 1}, nil
}

// FuzzNodeRegisterBody: whatever a stranger sends to PUT
// /v1/node/register, the answer is a 2xx or a 4xx api error (never a
// panic or a 5xx); a node is registered only with an introduction, an ID
// and a secret, and an HTTP address (if any) on the caller's own IP.
func FuzzNodeRegisterBody(f *testing.F) {
	for _, s := range []string{
		`{"Node":{"ID":"n1","SecretID":"s","HTTPAddr":"192.0.2.1:4646"},"IntroToken":"good"}`,
		`{"Node":{"ID":"n1","SecretID":"s","HTTPAddr":"http://192.0.2.1:4646"},"IntroToken":"good"}`,
		`{"Node":{"ID":"n1","SecretID":"s","HTTPAddr":"10.0.0.1:4646"},"IntroToken":"good"}`,
		`{"Node":{"ID":"n1","SecretID":"s"},"IntroToken":"x"}`, `{"Node":null}`, `{}`, ``, `{"Node":{"ID":1}}`,
		`{"Node":{"ID":"n1","SecretID":"s","HTTPAddr":"[::1]:1"},"IntroToken":"good"}`,
		`{"Node":{"ID":"n1","SecretID":"s","HTTPAddr":"192.0.2.1:4646/../x"},"IntroToken":"good"}`,
	} {
		f.Add([]byte(s))
	}
	reg := &registrar{}
	s, err := New(Config{Server: &ServerRole{Nodes: reg}, ACL: staticACL{}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		reg.got = nil
		w := httptest.NewRecorder()
		r := httptest.NewRequest("PUT", "/v1/node/register", bytes.NewReader(body)) // from 192.0.2.1
		h.ServeHTTP(w, r)
		if w.Code >= 500 || (w.Code >= 300 && w.Code < 400) {
			t.Fatalf("register %q = %d %s", body, w.Code, w.Body)
		}
		if w.Code != 200 {
			if reg.got != nil {
				t.Fatalf("register %q answered %d but registered %+v", body, w.Code, reg.got)
			}
			return
		}
		n := reg.got
		if n == nil || n.ID == "" || n.SecretID == "" || !bytes.Contains(body, []byte(`"good"`)) {
			t.Fatalf("register %q registered %+v", body, n)
		}
		if n.HTTPAddr != "" {
			u, err := url.Parse("http://" + strings.TrimPrefix(n.HTTPAddr, "http://"))
			if err != nil || u.Hostname() != "192.0.2.1" {
				t.Fatalf("register %q took HTTPAddr %q from 192.0.2.1", body, n.HTTPAddr)
			}
		}
	})
}

// grantClient holds one alloc of namespace "b" and serves its secret.
type grantClient struct{}

func (grantClient) Handler() nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { fmt.Fprint(w, "b-secret") })
}
func (grantClient) HasAlloc(id string) bool { return id == fuzzAlloc }
func (grantClient) AllocNamespace(id string) (string, bool) {
	return "b", id == fuzzAlloc
}
func (grantClient) NodeID() string     { return "node-1" }
func (grantClient) NodeSecret() string { return "node-1-secret" }

const fuzzAlloc = "0b0b0b0b-0000-4000-8000-000000000001"

// FuzzClientRoutes: a client-only agent serves an alloc of namespace b
// only to a caller who may act in b (here: none holds b) or who brings
// a server's grant for exactly that action on that alloc; whatever the
// path, query, token and grant, never a 5xx or a panic.
func FuzzClientRoutes(f *testing.F) {
	good := signGrant("node-1-secret", grant{Node: "node-1", Alloc: fuzzAlloc, Cap: acl.CapReadFS, Exp: time.Now().Add(time.Hour).Unix()})
	for _, c := range [][3]string{
		{"GET", "/v1/client/fs/cat/" + fuzzAlloc + "?path=x&namespace=a", "a"},
		{"GET", "/v1/client/fs/cat/" + fuzzAlloc + "?path=x", "g:" + good},
		{"GET", "/v1/client/fs/logs/" + fuzzAlloc + "?task=t&type=stdout", "g:" + good},
		{"GET", "/v1/client/allocation/" + fuzzAlloc + "/exec?namespace=a", "a"},
		{"POST", "/v1/client/allocation/" + fuzzAlloc + "/signal?namespace=b", ""},
		{"GET", "/v1/client/metadata?node_id=node-1", "g:" + good},
		{"GET", "/v1/client/fs/cat/" + fuzzAlloc[:8] + "?namespace=a", "a"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	parsed, _ := acl.Parse(`namespace "a" { policy = "write" }`)
	s, err := New(Config{Client: grantClient{}, ACL: staticACL{"a": acl.New(parsed), "": acl.New()}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, target, cred string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t") || len(method) == 0 || len(method) > 8 ||
			strings.ContainsAny(method, " /\r\n\t") {
			return
		}
		r, err := nethttp.NewRequest(method, "http://agent"+target, nil)
		if err != nil {
			return
		}
		if g, ok := strings.CutPrefix(cred, "g:"); ok {
			r.Header.Set(headerClientGrant, g)
		} else if cred != "" {
			r.Header.Set(api.HeaderToken, cred)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s = %d %s", method, target, w.Code, w.Body)
		}
		body, _ := io.ReadAll(w.Result().Body)
		if !bytes.Contains(body, []byte("b-secret")) {
			return
		}
		// Served: only with the good grant, for read-fs on the alloc.
		g, err := parseGrant("node-1-secret", r.Header.Get(headerClientGrant))
		if err != nil || clientAllocID(r.URL.Path) != fuzzAlloc || g.Alloc != fuzzAlloc || clientCap(r).cap != acl.CapReadFS {
			t.Fatalf("%s %s with %q served namespace b's alloc", method, target, cred)
		}
	})
}

// FuzzParseGrant: any header either fails or decodes to what was signed
// with the node's key; never a panic.
func FuzzParseGrant(f *testing.F) {
	f.Add(signGrant("k", grant{Node: "n", Alloc: "a", Cap: "read-fs", Exp: 1}))
	f.Add("")
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		g, err := parseGrant("k", tok)
		if err != nil {
			return
		}
		if signGrant("k", g) == "" {
			t.Fatalf("a parsed grant %+v does not sign", g)
		}
	})
}
