package http

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// parseTopics reads ?topic=Job:web&topic=Allocation:* into topic -> keys.
// No topic means every topic.
func parseTopics(vals []string) (map[string][]string, error) {
	if len(vals) == 0 {
		return map[string][]string{api.TopicAll: {"*"}}, nil
	}
	out := map[string][]string{}
	for _, v := range vals {
		topic, key, ok := strings.Cut(v, ":")
		if !ok {
			key = "*"
		}
		switch topic {
		case api.TopicJob, api.TopicEvaluation, api.TopicAllocation, api.TopicNode, api.TopicDeployment, api.TopicService, api.TopicAll:
		default:
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("unknown event topic %q (want Job, Evaluation, Allocation, Node, Deployment, Service or *)", topic))
		}
		if key == "" {
			return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("topic %q: empty key (use %s:*)", v, topic))
		}
		out[topic] = append(out[topic], key)
	}
	return out, nil
}

// eventHandlers serve the event stream.
type eventHandlers struct {
	s   *HTTPServer
	src EventSource
}

// stream streams NDJSON batches of api.Events, one per line, flushed per
// line, with {} heartbeats, until the client goes away or the
// subscription ends.
func (h *eventHandlers) stream(w nethttp.ResponseWriter, r *nethttp.Request) {
	if h.src == nil {
		api.WriteError(w, api.AsError(errNoServer()))
		return
	}
	q := r.URL.Query()
	topics, err := parseTopics(q["topic"])
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	var from uint64
	if v := q.Get("index"); v != "" {
		if from, err = strconv.ParseUint(v, 10, 64); err != nil {
			api.WriteError(w, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid index %q", v)))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub, err := h.src.Subscribe(ctx, topics, from)
	if err != nil {
		api.WriteError(w, api.AsError(fmt.Errorf("subscribe: %w", api.Errorf(api.ErrUnavailable, err.Error()))))
		return
	}
	defer sub.Close()
	flusher, _ := w.(nethttp.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(nethttp.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}

	// One goroutine reads the subscription (Next blocks); this handler
	// owns it and waits for it before returning.
	batches := make(chan api.Events)
	readerDone := make(chan error, 1)
	go func() {
		for {
			b, err := sub.Next(ctx)
			if err != nil {
				readerDone <- err
				return
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				readerDone <- ctx.Err()
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-readerDone
	}()

	// Events are filtered by ?namespace= (none or "*": all) and, with
	// ACLs, by what the token may read: an event of a namespace needs
	// read-job there, a node event node read.
	nsFilter, a := q.Get("namespace"), aclOf(r)
	keep := func(b api.Events) api.Events {
		if (nsFilter == "" || nsFilter == allNamespaces) && a == nil {
			return b
		}
		out := b
		out.Events = nil
		for _, e := range b.Events {
			if nsFilter != "" && nsFilter != allNamespaces && e.Namespace != "" && e.Namespace != nsFilter {
				continue
			}
			if a != nil && !a.IsManagement() {
				switch {
				case e.Topic == api.TopicNode && !a.AllowNode(false):
					continue
				case e.Topic != api.TopicNode && !a.AllowNamespace(cmp.Or(e.Namespace, api.DefaultNamespace), acl.CapReadJob):
					continue
				}
			}
			out.Events = append(out.Events, e)
		}
		return out
	}
	enc := json.NewEncoder(w)
	tick := time.NewTicker(h.s.cfg.EventHeartbeat)
	defer tick.Stop()
	for {
		var v any
		select {
		case <-ctx.Done():
			return
		case err := <-readerDone:
			readerDone <- err // for the deferred wait
			h.s.log.Debug("event stream ended", "err", err)
			return
		case b := <-batches:
			if b = keep(b); len(b.Events) == 0 {
				continue
			}
			v = b
		case <-tick.C:
			v = struct{}{}
		}
		if err := enc.Encode(v); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
