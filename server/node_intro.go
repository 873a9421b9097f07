package server

import (
	"context"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover/drover/api"
)

// Node introduction (as Nomad's client introduction): where the servers
// require it (Config.RequireNodeIntro), a node joins only with a
// credential an operator issued: an introduction token (a JWT the keyring
// signs, scoped to a node pool and optionally a node name, short-lived),
// or a client certificate of the region (api.NodeIntro.Certified, checked
// by the HTTP layer). Never with a secret it makes up: the secret a node
// sends becomes its credential only once it was introduced.

// introAudience is the aud of introduction tokens: no other token the
// keyring signs (workload identities) is one.
const introAudience = "drover-node-introduction"

// maxIntroTokenBytes bounds a token before it is parsed.
const maxIntroTokenBytes = 8 << 10

type introClaims struct {
	jwt.Claims
	NodePool string `json:"drover_node_pool"`
	NodeName string `json:"drover_node_name,omitempty"`
}

// nodeIntros makes and checks introduction tokens, signed with the
// keyring's active key. It is safe for concurrent use.
type nodeIntros struct {
	serverCore
	keys *Keyring
}

// create signs an introduction token for a node of req.NodePool (which
// must exist) named req.NodeName ("" = any name).
func (ni *nodeIntros) create(ctx context.Context, req *api.NodeIntroRequest) (*api.NodeIntroResponse, error) {
	ttl := req.TTL
	if ttl == 0 {
		ttl = api.DefaultNodeIntroTTL
	}
	if ttl < 0 || ttl > api.MaxNodeIntroTTL {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("introduction TTL %s: want more than 0 and at most %s", ttl, api.MaxNodeIntroTTL))
	}
	pool := req.NodePool
	if pool == "" {
		pool = api.DefaultNodePool
	}
	p, err := ni.state().NodePoolByName(nil, pool)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("node pool %q does not exist", pool))
	}
	signer, err := ni.keys.signer(ctx)
	if err != nil {
		return nil, err
	}
	now := ni.clock.Now()
	exp := now.Add(ttl)
	c := introClaims{
		Claims: jwt.Claims{Subject: "node-introduction:" + pool + ":" + req.NodeName, Audience: jwt.Audience{introAudience},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(exp), ID: newID()},
		NodePool: pool, NodeName: req.NodeName,
	}
	tok, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		return nil, fmt.Errorf("sign introduction: %w", err)
	}
	return &api.NodeIntroResponse{Token: tok, Expiration: exp.UTC().Truncate(time.Second)}, nil
}

// check says whether n may join (or move to its node pool) with
// intro: a certified peer may; else the token must be one of the
// keyring's, unexpired, for n's pool and, when it names one, n's name.
func (ni *nodeIntros) check(n *api.Node, intro api.NodeIntro) error {
	if intro.Certified {
		return nil
	}
	deny := func(why string) error {
		return api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("node %s: %s; a node joins with an introduction token "+
			"(drover node intro create, the client's intro_token) or a client certificate of the region", n.ID, why))
	}
	if intro.Token == "" {
		return deny("no introduction")
	}
	if len(intro.Token) > maxIntroTokenBytes {
		return deny("introduction token too large")
	}
	tok, err := jwt.ParseSigned(intro.Token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return deny("malformed introduction token")
	}
	key, err := ni.keys.publicKey(tok.Headers[0].KeyID)
	if err != nil {
		return err
	}
	if key == nil {
		return deny("introduction token signed by an unknown key")
	}
	var c introClaims
	if err := tok.Claims(key, &c); err != nil {
		return deny("introduction token signature invalid")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{introAudience}, Time: ni.clock.Now()}, 0); err != nil {
		return deny(fmt.Sprintf("introduction token not valid: %v", err))
	}
	if c.NodePool != n.NodePool {
		return deny(fmt.Sprintf("introduction token is for node pool %q, not %q", c.NodePool, n.NodePool))
	}
	if c.NodeName != "" && c.NodeName != n.Name {
		return deny(fmt.Sprintf("introduction token is for node %q, not %q", c.NodeName, n.Name))
	}
	return nil
}
