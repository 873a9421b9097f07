package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strconv"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// queryParams are the common read parameters.
type queryParams struct {
	namespace string // "default" when absent; "*" = all
	prefix    string
	index     uint64
	wait      time.Duration
}

func (s *HTTPServer) parseQuery(r *nethttp.Request) (*queryParams, error) {
	q := r.URL.Query()
	p := &queryParams{namespace: q.Get("namespace"), prefix: q.Get("prefix"), wait: DefaultWait}
	if p.namespace == "" {
		p.namespace = api.DefaultNamespace
	}
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid index %q: want a non-negative integer", v))
		}
		p.index = n
	}
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			// Nomad also accepts a bare number of seconds? It requires units; so do we.
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid wait %q: want a duration such as 30s", v))
		}
		if d < 0 {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid wait %q: negative", v))
		}
		p.wait = d
	}
	if p.wait > s.cfg.MaxWait {
		p.wait = s.cfg.MaxWait
	}
	return p, nil
}

// state is the server's current state store; with ws, it also watches
// the store's abandon channel (a snapshot restore replaced the store: a
// blocking query wakes up and reads the new one). The server role's State
// must be wired.
func (s *HTTPServer) state(ws memdb.WatchSet) Store {
	st, abandoned := s.role.State.CurrentState()
	if ws != nil {
		ws.Add(abandoned)
	}
	return st
}

// blocking answers a read, as a blocking query when ?index= is given: it
// re-runs read (on the current store) each time the watch set fires and
// returns once the index exceeds the asked one, or when the wait elapses
// (then with the current data), or when the client goes away.
func (s *HTTPServer) blocking(w nethttp.ResponseWriter, r *nethttp.Request, read readFunc) (any, error) {
	if s.role.State == nil {
		return nil, errNoServer()
	}
	p, err := s.parseQuery(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var cancel context.CancelFunc = func() {}
	if p.index > 0 {
		ctx, cancel = context.WithTimeout(ctx, p.wait)
	}
	defer cancel()
	ws := memdb.NewWatchSet()
	for {
		clear(ws) // a fired set is not waited on again
		out, idx, err := read(s.state(ws), ws)
		if err != nil {
			return nil, err
		}
		if p.index == 0 || idx > p.index {
			if out, err = answer(out); err != nil {
				return nil, err
			}
			s.setMeta(w, idx)
			return out, nil
		}
		if err := watch(ctx, ws); err != nil {
			if r.Context().Err() != nil {
				return nil, fmt.Errorf("blocking query: %w", api.Errorf(api.ErrTimeout, "client went away"))
			}
			// The wait elapsed: answer with the current data.
			out, idx, err := read(s.state(nil), nil)
			if err == nil {
				out, err = answer(out)
			}
			if err != nil {
				return nil, err
			}
			s.setMeta(w, idx)
			return out, nil
		}
	}
}

// watch waits until a channel of ws fires (nil) or ctx ends (its error).
// memdb's WatchCtx selects over 32 cases whatever the set's size; a
// node's alloc poll, the most common wait, watches three channels (its
// node, its alloc index, the store's abandon).
func watch(ctx context.Context, ws memdb.WatchSet) error {
	if ws == nil {
		return nil // as WatchCtx
	}
	var chs [4]<-chan struct{} // a nil channel never fires
	n := 0
	for ch := range ws {
		if n == len(chs) {
			return ws.WatchCtx(ctx)
		}
		chs[n] = ch
		n++
	}
	select {
	case <-chs[0]:
		return nil
	case <-chs[1]:
		return nil
	case <-chs[2]:
		return nil
	case <-chs[3]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lazyAnswer is a blocking read's answer built only when it is sent: a
// read whose index has not moved past the client's builds nothing.
type lazyAnswer func() (any, error)

// answer is out, built when it is a lazyAnswer.
func answer(out any) (any, error) {
	if f, ok := out.(lazyAnswer); ok {
		return f()
	}
	return out, nil
}

func (s *HTTPServer) setMeta(w nethttp.ResponseWriter, idx uint64) {
	if idx == 0 {
		idx = 1 // never 0: a client would block forever on ?index=0
	}
	h := w.Header()
	h.Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	known, contact := false, time.Duration(0)
	if c := s.role.Cluster; c != nil {
		known = c.Leader() != ""
		contact = c.LastContact()
	}
	h.Set(api.HeaderKnownLeader, strconv.FormatBool(known))
	h.Set(api.HeaderLastContact, strconv.FormatInt(contact.Milliseconds(), 10))
}

// objIndex is the index of a single object read: its ModifyIndex, so a
// watch that fires for a neighbour in the same radix node does not end a
// blocking query; the table index when the object carries none.
func objIndex(modify, table uint64) uint64 {
	if modify != 0 {
		return modify
	}
	return table
}

// maxIndex returns the largest index of the named tables.
func maxIndex(st Store, tables ...string) uint64 {
	var m uint64
	for _, t := range tables {
		if i := st.Index(t); i > m {
			m = i
		}
	}
	return m
}
