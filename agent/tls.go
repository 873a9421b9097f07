package agent

import (
	"crypto/tls"
	"net/http"
	"strings"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server/raftstore"
)

// peerTLS holds the agent's mutual TLS: serve is the HTTP API's, dial
// that of its own requests to other agents (nil both without tls http),
// raft that of Raft between servers (nil without tls rpc).
type peerTLS struct {
	serve, dial *tls.Config
	client      *http.Client // carries dial; nil without TLS
	raft        *raftstore.TLS
}

func newPeerTLS(a *Agent) (*peerTLS, error) {
	t := a.cfg.TLS
	p := &peerTLS{}
	tc := &tlsutil.Config{HTTP: t.HTTP, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname, VerifyHTTPSClient: t.VerifyHTTPSClient, Region: a.cfg.Region}
	if t.RPC && a.cfg.Server.Enabled && !a.cfg.DevMode {
		serve, dial, err := tc.Raft()
		if err != nil {
			return nil, err
		}
		p.raft = &raftstore.TLS{Serve: serve, Dial: dial}
	}
	if !t.HTTP {
		return p, nil
	}
	var err error
	if p.serve, err = tc.Server(); err != nil {
		return nil, err
	}
	if p.dial, err = tc.Client(); err != nil {
		return nil, err
	}
	p.client = &http.Client{Transport: agenthttp.PeerTransport(p.dial)}
	return p, nil
}

// addr is another agent's HTTP address with the scheme this agent uses.
func (p *peerTLS) addr(a string) string {
	if p.dial == nil || strings.Contains(a, "://") {
		return a
	}
	return "https://" + a
}

func (p *peerTLS) addrs(list []string) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = p.addr(a)
	}
	return out
}

// scheme is that of other agents' HTTP APIs ("" for plain http).
func (p *peerTLS) scheme() string {
	if p.dial == nil {
		return ""
	}
	return "https"
}

// apiClient is the API client of another agent's HTTP address.
func (p *peerTLS) apiClient(a string) *api.Client {
	c := api.NewClient(p.addr(a))
	if p.client != nil {
		c.HTTP = p.client
	}
	return c
}
