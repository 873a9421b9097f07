package agent

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/drover/drover/agent/federation"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// regions is the server's way to the other regions of its federation
// (server.Regions): its own HTTP API with ?region=, which forwards to a
// live server of that region (agent/http's region forwarding), over this
// server's TLS. The WAN pool starts after the server: until then only
// this region is known. A request the server makes on its own (token "")
// carries acl { replication_token } when one is set: the ACL layer knows
// no server identity, and without a token such a request is anonymous.
type regions struct {
	a   *Agent
	fed atomic.Pointer[federation.Federation]
}

var _ server.Regions = (*regions)(nil)

// serverRegions is the server's Regions: nil without a WAN pool
// (ports.serf_wan unset), where the server is not federated.
func (a *Agent) serverRegions() server.Regions {
	if a.cfg.Ports.WAN <= 0 {
		return nil
	}
	a.regions = &regions{a: a}
	return a.regions
}

// started hands the running WAN pool over (nil-safe).
func (r *regions) started(f *federation.Federation) {
	if r != nil {
		r.fed.Store(f)
	}
}

func (r *regions) Known() []string {
	if f := r.fed.Load(); f != nil {
		return f.Regions()
	}
	return []string{r.a.cfg.Region}
}

func (r *regions) Client(region, token string) (*api.Client, error) {
	if known := r.Known(); !slices.Contains(known, region) {
		return nil, api.Errorf(api.ErrUnknownRegion, fmt.Sprintf("unknown region %q (known: %s)", region, strings.Join(known, ", ")))
	}
	if token == "" && r.a.cfg.ACLEnabled {
		token = r.a.cfg.ACLReplicationToken
	}
	return r.a.regionAPI(region, token), nil
}
