package http

import (
	"encoding/json"
	"log/slog"
	nethttp "net/http"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// monitor streams this agent's log records from now on, as Nomad's
// GET /v1/agent/monitor: ?log_level= (trace and debug, info, warn, error;
// default info), ?log_json=true for JSON lines, ?plain=true for the bare
// lines instead of one {"Data": <base64 bytes>} frame per record.
// ?node_id= and ?server_id= naming another agent are refused: ask that
// agent's own API.
func (h *agentHandlers) monitor(w nethttp.ResponseWriter, r *nethttp.Request) {
	if h.s.cfg.Monitor == nil {
		api.WriteError(w, api.Errorf(api.ErrUnavailable, "this agent has no log monitor"))
		return
	}
	q := r.URL.Query()
	level, err := monitorLevel(q.Get("log_level"))
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	asJSON, err := boolParam(r, "log_json")
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	plain, err := boolParam(r, "plain")
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return
	}
	for _, k := range []string{"node_id", "server_id"} {
		if v := q.Get(k); v != "" && !h.isSelf(v) {
			api.WriteError(w, api.Errorf(api.ErrBadRequest, k+" "+strconv.Quote(v)+
				" is another agent: monitor it through its own HTTP API"))
			return
		}
	}
	sub := h.s.cfg.Monitor.Subscribe(level, asJSON, 0)
	defer sub.Close()
	flusher, _ := w.(nethttp.Flusher)
	if plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(nethttp.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case line := <-sub.C():
			if plain {
				_, err = w.Write(line)
			} else {
				err = enc.Encode(&api.StreamFrame{Data: line})
			}
			if err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// isSelf reports whether id names this agent (its name, or its gossip
// member name "name.region").
func (h *agentHandlers) isSelf(id string) bool {
	if h.s.cfg.Self == nil {
		return false
	}
	self := h.s.cfg.Self()
	if self == nil {
		return false
	}
	if v, ok := self.Config["Name"].(string); ok && v == id {
		return true
	}
	return self.Member != nil && self.Member.Name == id
}

func monitorLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "", "info":
		return slog.LevelInfo, nil
	case "trace", "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, api.Errorf(api.ErrBadRequest, "invalid log_level "+strconv.Quote(v)+" (want trace, debug, info, warn or error)")
}
