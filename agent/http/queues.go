package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// QueueState is the queue read side of Store: queues with what they hold
// (the implicit "default" too).
type QueueState interface {
	QueueStatuses(ws memdb.WatchSet, prefix string) ([]*api.QueueStatus, error)
	QueueStatus(ws memdb.WatchSet, name string) (*api.QueueStatus, error)
}

// QueuesBackend is the queue side of the server role. Errors wrap api
// sentinels (ErrBadRequest for an invalid queue, a broken tree or a busy
// queue, ErrNotFound for an unknown one).
type QueuesBackend interface {
	UpsertQueues(ctx context.Context, queues []*api.Queue) (uint64, error)
	DeleteQueue(ctx context.Context, name string) (uint64, error)
	// QueueFairShare is a queue's current fair share (nil when none was
	// computed: a follower, or only the default queue).
	QueueFairShare(name string) *api.QueueResources
}

// Tables a queue status reads (its blocking index).
var queueTables = []string{"queues", "queue_usage", "jobs", "job_summary"}

// queueHandlers serve /v1/queues and /v1/queue/{name...}.
type queueHandlers struct {
	s *HTTPServer
	b QueuesBackend
}

func (h *queueHandlers) ready() error {
	return h.s.need(h.b != nil, "this server cannot change queues")
}

// withFairShare is q (a copy) with the server's fair share for it.
func (h *queueHandlers) withFairShare(q *api.QueueStatus) *api.QueueStatus {
	if h.b == nil || q == nil || q.Queue == nil || q.FairShare != nil {
		return q
	}
	c := *q
	c.FairShare = h.b.QueueFairShare(q.Queue.Name)
	return &c
}

// list answers []*api.QueueStatus (prefix, filter, paging, blocking).
func (h *queueHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	prefix := r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, queueTables...)
		out, err := st.QueueStatuses(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		if a := aclOf(r); a != nil {
			out = slices.DeleteFunc(out, func(q *api.QueueStatus) bool { return !a.AllowQueue(q.Queue.Name, false) })
		}
		for i, q := range out {
			out[i] = h.withFairShare(q)
		}
		out, err = listPage(w, r, out, func(q *api.QueueStatus) string { return q.Queue.Name })
		return out, idx, err
	})
}

func (h *queueHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.role.State == nil {
		return nil, errNoServer()
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.AllowQueue(name, false) {
		return nil, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: queue %q", name))
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, queueTables...)
		q, err := st.QueueStatus(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if q == nil {
			return nil, 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("queue %q not found", name))
		}
		return h.withFairShare(q), idx, nil
	})
}

// queueUpsertBody is one api.Queue (the contract) or, with Queues set, a
// batch applied all or none (a parent with its children).
type queueUpsertBody struct {
	api.Queue
	Queues []*api.Queue `json:"Queues,omitempty"`
}

// upsert takes one queue (or a batch) and answers the Raft index.
func (h *queueHandlers) upsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	idx, err := h.b.UpsertQueues(r.Context(), queues)
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	if qw, ok := h.b.(queueWarner); ok {
		if warn := qw.QueueWarnings(queues); len(warn) > 0 {
			return &api.QueueUpsertResponse{Warnings: strings.Join(warn, "\n")}, nil
		}
	}
	return nil, nil
}

// queueWarner is the optional ability of a QueuesBackend to say what in
// queues it applied may not work as written (a GPU model no node has).
type queueWarner interface {
	QueueWarnings(queues []*api.Queue) []string
}

func (h *queueHandlers) delete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteQueue(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}
