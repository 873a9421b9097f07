package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// headerLeaderForwarded marks a request a server forwarded to the leader;
// a server that receives it and is not (or no longer) the leader answers
// not_leader rather than forwarding again.
const headerLeaderForwarded = "X-Drover-Leader-Forwarded"

// localWrite lists non-GET server routes any server answers itself.
func localWrite(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/jobs/parse"
}

// consistentByDefault lists reads that verify leadership with a quorum
// unless ?stale (like ?consistent).
func consistentByDefault(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot"
}

// localRead lists server reads every server answers from its own view
// whatever the parameters: who it thinks leads (used to find the leader),
// and the event stream (a feed of this server's state changes, as in
// Nomad, which does not forward Event.Stream to the leader).
func localRead(r *nethttp.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v1/status/") || r.URL.Path == "/v1/event/stream"
}

// forwardToLeader sends server requests arriving at a follower to the
// leader: writes, and reads unless ?stale, as Nomad does (blocking queries
// included: the leader holds them). So a write a server acknowledged is
// visible at once to a plain read on that same server: the leader answered
// the write after its own FSM applied it, and answers the read too.
// ?stale reads are served locally (the X-Drover-KnownLeader and
// X-Drover-LastContact headers say how stale). On the leader, ?consistent
// reads first verify leadership with a quorum; plain reads are served.
func (s *HTTPServer) forwardToLeader(next nethttp.Handler) nethttp.Handler {
	ls := s.role.Leadership
	if ls == nil {
		return next
	}
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if !serverRoute(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		read := r.Method == nethttp.MethodGet || r.Method == nethttp.MethodHead
		if !read && localWrite(r) {
			next.ServeHTTP(w, r)
			return
		}
		verify := false
		if read {
			if localRead(r) {
				next.ServeHTTP(w, r)
				return
			}
			q := r.URL.Query()
			stale, err := boolParam(r, "stale")
			if err != nil {
				api.WriteError(w, api.AsError(err))
				return
			}
			consistent, err := boolParam(r, "consistent")
			if err != nil {
				api.WriteError(w, api.AsError(err))
				return
			}
			if !q.Has("consistent") && consistentByDefault(r) {
				consistent = !stale
			}
			if stale && !consistent {
				next.ServeHTTP(w, r)
				return
			}
			verify = consistent
		}
		if ls.IsLeader() {
			if verify {
				ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
				err := ls.VerifyLeader(ctx)
				cancel()
				if err != nil {
					api.WriteError(w, api.AsError(err))
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get(headerLeaderForwarded) != "" {
			// Not processed at all: the sender may safely try again.
			w.Header().Set(headerNotProcessed, "1")
			api.WriteError(w, api.Errorf(api.ErrNotLeader, "request forwarded to a server that is not the leader (leadership changed); retry"))
			return
		}
		s.forwardWithHold(w, r, ls, next)
	})
}

// headerNotProcessed marks an answer to a forwarded request that was not
// processed, so the forwarding server may retry it.
const headerNotProcessed = "X-Drover-Not-Processed"

// LeaderHoldTimeout is how long a request waits for a leader (during an
// election) before failing with no_leader.
var LeaderHoldTimeout = 5 * time.Second

// leaderTransport carries forwarded requests on fresh connections: a
// pooled connection to a leader that just went away fails after the
// request was written, and such a request cannot be safely retried; a
// refused dial can.
var leaderTransport = &nethttp.Transport{
	Proxy:                 nil,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	DisableKeepAlives:     true,
	ResponseHeaderTimeout: 0, // blocking queries are forwarded
}

// holdRetryAfter is forwardWithHold's retry timer (a test stops it).
var holdRetryAfter = func(attempt int) <-chan time.Time {
	return time.After(min(5*time.Millisecond<<(attempt-1), 50*time.Millisecond))
}

// errRetryForward makes the proxy's ErrorHandler try again.
var errRetryForward = errors.New("leader did not process the request")

// forwardWithHold proxies r to the leader. While no leader is known, or
// the one known refuses connections or hands the request back unprocessed
// (an election is under way), it waits and tries again, up to
// LeaderHoldTimeout: a failover costs writers a pause, not an error.
// Requests that may have reached the leader are never sent twice.
func (s *HTTPServer) forwardWithHold(w nethttp.ResponseWriter, r *nethttp.Request, ls Leadership, next nethttp.Handler) {
	var body []byte
	replay := r.Body == nil || r.Body == nethttp.NoBody || !isSnapshotRestore(r)
	if replay && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			api.WriteError(w, api.AsError(bodyError(err)))
			return
		}
		body = b
	}
	r.Pattern = "forward leader"
	caller := s.peerOf(r).String() // the leader sees this server's connection
	hold := time.NewTimer(LeaderHoldTimeout)
	defer hold.Stop()
	// Retries back off from 5 ms to 50 ms, and go at once when the server
	// sees a new leader: an agent's first requests often arrive while its
	// single server is electing itself.
	var changed <-chan struct{}
	wait := func(attempt int) bool {
		select {
		case <-hold.C:
			return false
		case <-r.Context().Done():
			return false
		case <-changed:
			return true
		case <-holdRetryAfter(attempt):
			return true
		}
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 && (!replay || !wait(attempt)) {
			break
		}
		changed = ls.LeaderChanged() // before the leader is read
		if replay {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		if ls.IsLeader() {
			next.ServeHTTP(w, r)
			return
		}
		addr := ls.LeaderHTTPAddr()
		if addr == "" {
			lastErr = api.Errorf(api.ErrNoLeader, "no cluster leader known; retry")
			continue
		}
		u, err := s.peerURL(addr)
		if err != nil {
			api.WriteError(w, api.Errorf(api.ErrInternal, fmt.Sprintf("leader HTTP address %q: %v", addr, err)))
			return
		}
		retry := false
		proxy := &httputil.ReverseProxy{
			Transport: s.leaderTr,
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Header.Set(headerLeaderForwarded, "1")
				pr.Out.Header.Set(headerPeer, caller)
				pr.SetXForwarded()
			},
			ModifyResponse: func(resp *nethttp.Response) error {
				if resp.Header.Get(headerNotProcessed) != "" {
					return errRetryForward
				}
				return nil
			},
			FlushInterval: -1,
			ErrorHandler: func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
				var op *net.OpError
				if errors.Is(err, errRetryForward) || (errors.As(err, &op) && op.Op == "dial") {
					retry, lastErr = true, api.Errorf(api.ErrNoLeader, fmt.Sprintf("leader at %s unavailable: %v", addr, err))
					return
				}
				api.WriteError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("forward to leader at %s: %v", addr, err)))
			},
		}
		proxy.ServeHTTP(w, r)
		if !retry {
			return
		}
	}
	if lastErr == nil {
		lastErr = api.Errorf(api.ErrNoLeader, "no cluster leader; retry")
	}
	api.WriteError(w, api.AsError(lastErr))
}
