package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_http_request_duration_seconds", Help: "HTTP request latency by route pattern (blocking queries included).",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 300},
		}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

// statusWriter records the status; it passes Flush through for streams.
type statusWriter struct {
	nethttp.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		mirrorNomadHeaders(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = nethttp.StatusOK
		mirrorNomadHeaders(w.Header())
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(nethttp.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() nethttp.ResponseWriter { return w.ResponseWriter }

// nomadHeaders are drover's query-meta headers and Nomad's names for them;
// Nomad tooling (its CLI and Go client, Terraform, nomad-pack) reads the
// latter.
var nomadHeaders = [...][2]string{
	{api.HeaderIndex, "X-Nomad-Index"},
	{api.HeaderKnownLeader, "X-Nomad-KnownLeader"},
	{api.HeaderLastContact, "X-Nomad-LastContact"},
}

// mirrorNomadHeaders sets each Nomad header beside drover's, before the
// header is written.
func mirrorNomadHeaders(h nethttp.Header) {
	for _, p := range nomadHeaders {
		if v := h.Get(p[0]); v != "" {
			h.Set(p[1], v)
		}
	}
}

// middleware wraps every route: body limit, panic safety, logging, metrics.
func (s *HTTPServer) middleware(next nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		switch {
		case r.Body == nil || r.Body == nethttp.NoBody:
		case isSnapshotRestore(r): // its own size limit, in the handler
			r.Body = &progressBody{ReadCloser: r.Body, rc: nethttp.NewResponseController(sw), timeout: s.cfg.ReadTimeout}
		default:
			r.Body = nethttp.MaxBytesReader(sw, r.Body, s.cfg.MaxBodyBytes)
		}
		defer func() {
			if p := recover(); p != nil {
				if p == nethttp.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("http handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if sw.status == 0 {
					api.WriteError(sw, api.Errorf(api.ErrInternal, "internal error"))
				}
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			code := sw.status
			if code == 0 {
				code = nethttp.StatusOK
			}
			d := time.Since(start)
			s.metrics.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
			s.metrics.duration.WithLabelValues(route).Observe(d.Seconds())
			s.log.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", code, "duration", d, "bytes", sw.bytes)
		}()
		if s.routeAllRegions(sw, r) { // ?region=all: the global views (global.go)
			return
		}
		if s.routeRegion(sw, r) { // for another region: forwarded there (region.go)
			return
		}
		next.ServeHTTP(sw, r)
	})
}

// apiFunc is a JSON endpoint: it returns the value to encode or an error.
// errWritten tells wrap that the handler wrote the response itself.
var errWritten = errors.New("response written")

type apiFunc func(w nethttp.ResponseWriter, r *nethttp.Request) (any, error)

// wrap renders an apiFunc's result as JSON or its error as the error body.
func (s *HTTPServer) wrap(f apiFunc) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) {
		out, err := f(w, r)
		if err == errWritten {
			return
		}
		if err != nil {
			e := api.AsError(err)
			if e.Status >= 500 {
				s.log.Warn("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			api.WriteError(w, e)
			return
		}
		if idx := writeIndex(out); idx > 0 && w.Header().Get(api.HeaderIndex) == "" {
			w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
		}
		writeJSON(w, nethttp.StatusOK, out)
	}
}

// writeIndex is the Raft index a write answered with (0 for reads).
func writeIndex(out any) uint64 {
	switch r := out.(type) {
	case *api.JobRegisterResponse:
		return r.Index
	case *api.JobDeregisterResponse:
		return r.Index
	case *api.NodeUpdateResponse:
		return r.Index
	case *api.NodeRegisterResponse:
		return r.Index
	case *api.AllocStopResponse:
		return r.Index
	case *api.JobDispatchResponse:
		return r.Index
	case *api.PeriodicForceResponse:
		return r.Index
	case *api.SchedulerSetConfigurationResponse:
		return r.Index
	}
	return 0
}

func writeJSON(w nethttp.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The same bytes as encoding/json (TestResponseCodecMatchesJSON), in
	// less time: nodes' alloc fetches are a large share of a busy leader's
	// work.
	_ = codec.Encode(w, v)
}

// decodeBody reads a JSON body into v: unknown fields, trailing data, an
// empty body and malformed JSON are 400; an oversized body is 413.
func decodeBody(r *nethttp.Request, v any) error {
	if r.Body == nil {
		return api.Errorf(api.ErrBadRequest, "request body required")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return decodeOne(dec, v)
}

// decodeClientBody reads the body of a client-protocol request (a node's
// register, heartbeat, alloc fetch and alloc updates: at 10,000 nodes the
// bulk of a server's requests) with the servers' codec, several times
// faster than encoding/json. Unlike decodeBody it ignores fields it does
// not know, as the servers' own Raft codec does, so that a client newer
// than its servers keeps working during an upgrade. A body that does not
// decode is decoded again by encoding/json, for decodeBody's errors.
func decodeClientBody(r *nethttp.Request, v any) error {
	if r.Body == nil {
		return api.Errorf(api.ErrBadRequest, "request body required")
	}
	buf := clientBodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledClientBody {
			buf.Reset()
			clientBodies.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return bodyError(err)
	}
	if codec.Unmarshal(buf.Bytes(), v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero() // drop what the failed decode set
	return decodeOne(json.NewDecoder(bytes.NewReader(buf.Bytes())), v)
}

// clientBodies are decodeClientBody's read buffers (the codec copies the
// strings it decodes: nothing keeps a buffer after the call), kept up to
// maxPooledClientBody; a larger one, a rare batch, goes to the collector.
var clientBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledClientBody = 1 << 20

// decodeOne decodes exactly one JSON value into v.
func decodeOne(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		if err == nil {
			return api.Errorf(api.ErrBadRequest, "request body: unexpected data after the JSON value")
		}
		return bodyError(err)
	}
	return nil
}

func bodyError(err error) error {
	var mbe *nethttp.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return api.Errorf(api.ErrBodyTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return api.Errorf(api.ErrBadRequest, "request body not received within the read timeout (agent limits.http_read_timeout)")
	case errors.Is(err, io.EOF):
		return api.Errorf(api.ErrBadRequest, "request body required")
	case errors.As(err, &se):
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err))
	case errors.As(err, &te):
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("JSON field %q: cannot use %s as %s", te.Field, te.Value, te.Type))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return api.Errorf(api.ErrBadRequest, "malformed JSON: unexpected end of body")
	}
	return api.Errorf(api.ErrBadRequest, "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

// notFound is the catch-all: JSON 404 for unknown paths, 405 (with Allow)
// for a known path with another method.
func (s *HTTPServer) notFound(w nethttp.ResponseWriter, r *nethttp.Request) {
	var allow []string
	for _, m := range []string{nethttp.MethodGet, nethttp.MethodPut, nethttp.MethodPost, nethttp.MethodDelete} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := s.mux.Handler(r2); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		api.WriteError(w, api.Errorf(api.ErrMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))))
		return
	}
	api.WriteError(w, api.Errorf(api.ErrNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)))
}
