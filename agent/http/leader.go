package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// headerLeaderForwarded marks a request a server forwarded to the leader;
// a server that receives it and is not (or no longer) the leader answers
// not_leader rather than forwarding again.
const headerLeaderForwarded = "X-Drover-Leader-Forwarded"

// LeaderServer is the optional ability of a Server to say who leads: with
// it, writes to a follower are forwarded to the leader's HTTP address and
// ?consistent reads are checked with the leader (found by type assertion).
type LeaderServer interface {
	IsLeader() bool
	// LeaderHTTPAddr is the leader's HTTP host:port ("" when unknown).
	LeaderHTTPAddr() string
	// VerifyLeader confirms leadership with a quorum (api.ErrNotLeader).
	VerifyLeader(ctx context.Context) error
}

// localWrite lists non-GET server routes any server answers itself.
func localWrite(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/jobs/parse"
}

// consistentByDefault lists reads that go to the leader unless ?stale.
func consistentByDefault(r *nethttp.Request) bool {
	return r.URL.Path == "/v1/operator/snapshot"
}

// forwardToLeader sends writes (and ?consistent reads) arriving at a
// follower to the leader, and verifies leadership for ?consistent reads
// on the leader. Plain reads are served locally (possibly stale; the
// X-Drover-KnownLeader and X-Drover-LastContact headers say how stale).
func (s *HTTPServer) forwardToLeader(next nethttp.Handler) nethttp.Handler {
	ls, ok := s.cfg.Server.(LeaderServer)
	if !ok {
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
		if read {
			q := r.URL.Query()
			stale, err := boolParam(r, "stale")
			if err != nil {
				writeError(w, api.AsError(err))
				return
			}
			consistent, err := boolParam(r, "consistent")
			if err != nil {
				writeError(w, api.AsError(err))
				return
			}
			if !q.Has("consistent") && consistentByDefault(r) {
				consistent = !stale
			}
			if !consistent {
				next.ServeHTTP(w, r)
				return
			}
		}
		if ls.IsLeader() {
			if read {
				ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
				err := ls.VerifyLeader(ctx)
				cancel()
				if err != nil {
					writeError(w, api.AsError(err))
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get(headerLeaderForwarded) != "" {
			writeError(w, api.Errorf(api.ErrNotLeader, "request forwarded to a server that is not the leader (leadership changed); retry"))
			return
		}
		addr := ls.LeaderHTTPAddr()
		if addr == "" {
			writeError(w, api.Errorf(api.ErrNoLeader, "no cluster leader known; retry"))
			return
		}
		target := addr
		if !strings.Contains(target, "://") {
			target = "http://" + target
		}
		u, err := url.Parse(target)
		if err != nil {
			writeError(w, api.Errorf(api.ErrInternal, fmt.Sprintf("leader HTTP address %q: %v", addr, err)))
			return
		}
		r.Pattern = "forward leader"
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Header.Set(headerLeaderForwarded, "1")
				pr.SetXForwarded()
			},
			FlushInterval: -1,
			ErrorHandler: func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
				writeError(w, api.Errorf(api.ErrUnavailable, fmt.Sprintf("forward to leader at %s: %v", addr, err)))
			},
		}
		proxy.ServeHTTP(w, r)
	})
}
