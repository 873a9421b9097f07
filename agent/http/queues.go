package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// QueueState is the optional queue read side of State (found by type
// assertion): queues with what they hold (the implicit "default" too).
type QueueState interface {
	QueueStatuses(ws memdb.WatchSet, prefix string) ([]*api.QueueStatus, error)
	QueueStatus(ws memdb.WatchSet, name string) (*api.QueueStatus, error)
}

// QueueServer is the optional queue write side of Server. Errors wrap api
// sentinels (ErrBadRequest for an invalid queue, a broken tree or a busy
// queue, ErrNotFound for an unknown one).
type QueueServer interface {
	UpsertQueues(ctx context.Context, queues []*api.Queue) (uint64, error)
	DeleteQueue(ctx context.Context, name string) (uint64, error)
}

// Tables a queue status reads (its blocking index).
var queueTables = []string{"queues", "queue_usage", "jobs", "job_summary"}

func (s *HTTPServer) queueRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/queues", s.queueList)
	h("PUT /v1/queues", s.queueUpsert)
	h("POST /v1/queues", s.queueUpsert)
	h("GET /v1/queue/{name...}", s.queueGet)
	h("DELETE /v1/queue/{name...}", s.queueDelete)
}

func (s *HTTPServer) queueState() (QueueState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	st, ok := s.cfg.State.(QueueState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "queues are not available on this agent")
	}
	return st, nil
}

func (s *HTTPServer) queueServer() (QueueServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	qs, ok := s.cfg.Server.(QueueServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot change queues")
	}
	return qs, nil
}

// FairShareServer is the optional ability of Server to say a queue's
// current fair share (nil when none was computed: a follower, or only the
// default queue).
type FairShareServer interface {
	QueueFairShare(name string) *api.QueueResources
}

// withFairShare is q (a copy) with the server's fair share for it.
func (s *HTTPServer) withFairShare(q *api.QueueStatus) *api.QueueStatus {
	fs, ok := s.cfg.Server.(FairShareServer)
	if !ok || q == nil || q.Queue == nil || q.FairShare != nil {
		return q
	}
	c := *q
	c.FairShare = fs.QueueFairShare(q.Queue.Name)
	return &c
}

// queueList answers []*api.QueueStatus (prefix, filter, paging, blocking).
func (s *HTTPServer) queueList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.queueState()
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(queueTables...)
		out, err := st.QueueStatuses(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		if a := aclOf(r); a != nil {
			out = slices.DeleteFunc(out, func(q *api.QueueStatus) bool { return !a.AllowQueue(q.Queue.Name, false) })
		}
		for i, q := range out {
			out[i] = s.withFairShare(q)
		}
		out, err = listPage(w, r, out, func(q *api.QueueStatus) string { return q.Queue.Name })
		return out, idx, err
	})
}

func (s *HTTPServer) queueGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.queueState()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.AllowQueue(name, false) {
		return nil, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: queue %q", name))
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex(queueTables...)
		q, err := st.QueueStatus(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if q == nil {
			return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("queue %q not found", name))
		}
		return s.withFairShare(q), idx, nil
	})
}

// queueUpsertBody is one api.Queue (the contract) or, with Queues set, a
// batch applied all or none (a parent with its children).
type queueUpsertBody struct {
	api.Queue
	Queues []*api.Queue `json:"Queues,omitempty"`
}

// queueUpsert takes one queue (or a batch) and answers the Raft index.
func (s *HTTPServer) queueUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	qs, err := s.queueServer()
	if err != nil {
		return nil, err
	}
	var b queueUpsertBody
	if err := decodeBody(r, &b); err != nil {
		return nil, err
	}
	queues := b.Queues
	if len(queues) == 0 {
		queues = []*api.Queue{&b.Queue}
	} else if b.Name != "" {
		return nil, api.Errorf(api.ErrBadRequest, "request body: give one queue or Queues, not both")
	}
	idx, err := qs.UpsertQueues(r.Context(), queues)
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) queueDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	qs, err := s.queueServer()
	if err != nil {
		return nil, err
	}
	idx, err := qs.DeleteQueue(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}
