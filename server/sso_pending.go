package server

import (
	"container/list"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/drover/drover/api"
)

// Bounds of the pending OIDC logins. /v1/acl/oidc/auth-url is public, so
// strangers add to this table; the bounds keep one of them from taking
// the logins of everyone else.
const (
	// oidcMaxPendingPerClient is how many logins one client address may
	// have in progress: enough for a person who retries, or a few people
	// behind one NAT (a finished login leaves at once); more are refused
	// with 429 until one finishes or expires.
	oidcMaxPendingPerClient = 16
	// oidcMaxPending bounds the table's memory (an entry is well under
	// 1 KiB). Full, it takes 256 addresses at their own cap; then a new
	// login evicts the oldest one of the client that holds the most, so
	// the flooders lose their own logins first and nobody is refused.
	oidcMaxPending = 4096
)

// errTooManyLogins is the answer to a client at oidcMaxPendingPerClient.
var errTooManyLogins = api.NewError(http.StatusTooManyRequests, "too_many_requests",
	fmt.Sprintf("too many OIDC logins in progress from this address (at most %d); finish one or wait %s for them to expire",
		oidcMaxPendingPerClient, oidcLoginTTL))

// oidcClientKey is what the per-client cap counts: an IPv4 address, an
// IPv6 /64 (one host usually holds a whole /64), or, for anything that
// is not an IP address, one shared key.
func oidcClientKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "?"
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// pendingLogins is the table of OIDC logins started and not yet finished,
// by state, with an index by client and one by age. The zero value is
// empty and ready; its owner (oidcFlows) holds the lock.
type pendingLogins struct {
	byState  map[string]*oidcPending
	byClient map[string][]*oidcPending // oldest first
	byAge    list.List                 // of *oidcPending, oldest (first to expire) first
	seq      uint64
}

// add stores p under p.state for p.client (a key of oidcClientKey) after
// dropping the logins expired at now: errTooManyLogins when the client is
// at its cap; a full table first evicts the oldest login of the client
// holding the most.
func (t *pendingLogins) add(now time.Time, p *oidcPending) error {
	t.expire(now)
	if len(t.byClient[p.client]) >= oidcMaxPendingPerClient {
		return errTooManyLogins
	}
	if len(t.byState) >= oidcMaxPending {
		t.evict()
	}
	if t.byState == nil {
		t.byState, t.byClient = map[string]*oidcPending{}, map[string][]*oidcPending{}
	}
	t.seq++
	p.seq = t.seq
	p.elem = t.byAge.PushBack(p)
	t.byState[p.state] = p
	t.byClient[p.client] = append(t.byClient[p.client], p)
	return nil
}

// take removes and returns the login of state (nil if none): a state is
// good for one try.
func (t *pendingLogins) take(state string) *oidcPending {
	p := t.byState[state]
	if p != nil {
		t.remove(p)
	}
	return p
}

// expire drops the logins expired at now. All logins live oidcLoginTTL,
// so the oldest expire first.
func (t *pendingLogins) expire(now time.Time) {
	for e := t.byAge.Front(); e != nil; e = t.byAge.Front() {
		p := e.Value.(*oidcPending)
		if !now.After(p.expires) {
			return
		}
		t.remove(p)
	}
}

// evict drops the oldest login of the client holding the most (of those
// holding as many, the one with the oldest login).
func (t *pendingLogins) evict() {
	var victim []*oidcPending
	for _, ps := range t.byClient {
		if len(ps) > len(victim) || (len(ps) == len(victim) && ps[0].seq < victim[0].seq) {
			victim = ps
		}
	}
	if len(victim) > 0 {
		t.remove(victim[0])
	}
}

func (t *pendingLogins) remove(p *oidcPending) {
	delete(t.byState, p.state)
	t.byAge.Remove(p.elem)
	ps := t.byClient[p.client]
	if i := slices.Index(ps, p); i >= 0 {
		ps = slices.Delete(ps, i, i+1)
	}
	if len(ps) == 0 {
		delete(t.byClient, p.client)
	} else {
		t.byClient[p.client] = ps
	}
}
