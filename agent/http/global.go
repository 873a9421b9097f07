package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/drover/drover/api"
)

// Global views (?region=all): GET /v1/usage and GET /v1/queues over every
// region of the federation. The agent asks each region as the caller
// would, one request per region with the caller's token (its own region
// through its own routes, the others through forwarding by region: each
// region authenticates and authorises the caller itself), in parallel,
// and merges the answers, each row or queue marked with its region. A
// region that does not answer in GlobalViewTimeout, or answers an error,
// is left out and named in Missing, with Partial set. Read-only: nothing
// else takes region=all.

// GlobalViewTimeout bounds each region's answer to a global view.
var GlobalViewTimeout = 5 * time.Second

// routeAllRegions answers a request for ?region=all and reports whether
// it did. A client agent leaves it to its servers (forwarded as any
// request for another region).
func (s *HTTPServer) routeAllRegions(w nethttp.ResponseWriter, r *nethttp.Request) bool {
	if r.URL.Query().Get("region") != api.RegionAll || r.Header.Get(headerRegionForwarded) != "" {
		return false
	}
	if s.cfg.Server == nil && len(s.cfg.Servers) > 0 {
		return false
	}
	r.Pattern = "global view"
	var out any
	var err error
	switch {
	case r.Method == nethttp.MethodGet && r.URL.Path == "/v1/usage":
		out, err = s.usageAll(r)
	case r.Method == nethttp.MethodGet && r.URL.Path == "/v1/queues":
		out, err = s.queuesAll(r)
	default:
		err = api.Errorf(api.ErrBadRequest, "region=all serves only GET /v1/usage and GET /v1/queues (read-only global views)")
	}
	if err != nil {
		api.WriteError(w, api.AsError(err))
		return true
	}
	writeJSON(w, nethttp.StatusOK, out)
	return true
}

// regionAnswer is one region's answer to a global view.
type regionAnswer struct {
	region string
	status int
	body   []byte
}

// allRegions sends r to every known region (this one first among equals:
// the list is sorted) with its query changed by query, and returns the
// answers that came within GlobalViewTimeout, by region.
func (s *HTTPServer) allRegions(r *nethttp.Request, query func(q map[string][]string)) (regions []string, got map[string]regionAnswer) {
	regions = []string{s.regionOf()}
	if s.cfg.Regions != nil {
		regions = s.cfg.Regions.Regions()
	}
	ctx, cancel := context.WithTimeout(r.Context(), GlobalViewTimeout)
	defer cancel()
	answers := make(chan regionAnswer, len(regions))
	var wg sync.WaitGroup
	for _, region := range regions {
		sub := r.Clone(ctx)
		q := sub.URL.Query()
		q.Set("region", region)
		q.Del("index") // never a blocking query
		q.Del("wait")
		query(q)
		sub.URL.RawQuery = q.Encode()
		sub.RequestURI = ""
		sub.Body = nethttp.NoBody
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := &bufferWriter{header: nethttp.Header{}}
			s.handler.ServeHTTP(rec, sub)
			answers <- regionAnswer{region: region, status: rec.statusCode(), body: rec.buf.Bytes()}
		}()
	}
	got = map[string]regionAnswer{}
	for range regions {
		select {
		case a := <-answers:
			got[a.region] = a
		case <-ctx.Done():
			// Those still out are missing: their requests end with ctx.
			cancel()
			wg.Wait()
			return regions, got
		}
	}
	return regions, got
}

// merge decodes each region's answer with each, in region order; a
// region that did not answer 200 is missing. An error of this region's
// own (a bad parameter, a refused token) is the answer's error.
func (s *HTTPServer) merge(regions []string, got map[string]regionAnswer, each func(region string, body []byte) error) (missing []string, err error) {
	for _, region := range regions {
		a, ok := got[region]
		if ok && a.status == nethttp.StatusOK {
			if err := each(region, a.body); err != nil {
				return nil, fmt.Errorf("region %q: decode answer: %w", region, err)
			}
			continue
		}
		if ok && region == s.regionOf() && a.status >= 400 && a.status < 500 {
			var e struct {
				Error *api.Error `json:"error"`
			}
			if json.Unmarshal(a.body, &e) == nil && e.Error != nil {
				e.Error.Status = a.status
				return nil, e.Error
			}
		}
		missing = append(missing, region)
	}
	return missing, nil
}

// usageAll answers GET /v1/usage?region=all: every region's rows for the
// same window (from and to fixed here when not given).
func (s *HTTPServer) usageAll(r *nethttp.Request) (any, error) {
	q := r.URL.Query()
	if f := q.Get("format"); f != "" && f != "json" {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("format=%q: region=all answers json only", f))
	}
	to, err := usageTime(q.Get("to"), "to", time.Now().Unix())
	if err != nil {
		return nil, err
	}
	from, err := usageTime(q.Get("from"), "from", to-int64(DefaultUsageWindow/time.Second))
	if err != nil {
		return nil, err
	}
	regions, got := s.allRegions(r, func(q map[string][]string) {
		q["from"], q["to"] = []string{strconv.FormatInt(from, 10)}, []string{strconv.FormatInt(to, 10)}
	})
	by := q.Get("by")
	if by == "" {
		by = api.UsageByQueue
	}
	out := &api.UsageResponse{By: by, From: from, To: to, Rows: []api.UsageRow{}}
	missing, err := s.merge(regions, got, func(region string, body []byte) error {
		var u api.UsageResponse
		if err := json.Unmarshal(body, &u); err != nil {
			return err
		}
		for _, row := range u.Rows {
			row.Region = region
			out.Rows = append(out.Rows, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Partial, out.Missing = len(missing) > 0, missing
	return out, nil
}

// queuesAll answers GET /v1/queues?region=all: every region's queues,
// by region then name.
func (s *HTTPServer) queuesAll(r *nethttp.Request) (any, error) {
	regions, got := s.allRegions(r, func(map[string][]string) {})
	out := &api.QueueStatusesAll{Queues: []*api.QueueStatus{}}
	missing, err := s.merge(regions, got, func(region string, body []byte) error {
		var qs []*api.QueueStatus
		if err := json.Unmarshal(body, &qs); err != nil {
			return err
		}
		for _, q := range qs {
			q.Region = region
		}
		out.Queues = append(out.Queues, qs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out.Queues, func(a, b *api.QueueStatus) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(queueName(a), queueName(b)))
	})
	out.Partial, out.Missing = len(missing) > 0, missing
	return out, nil
}

func queueName(q *api.QueueStatus) string {
	if q.Queue == nil {
		return ""
	}
	return q.Queue.Name
}

// bufferWriter keeps one region's answer to a global view.
type bufferWriter struct {
	header nethttp.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferWriter) Header() nethttp.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = nethttp.StatusOK
	}
	return b.buf.Write(p)
}

// Flush is a no-op: the proxy of forwarding by region flushes as it
// copies.
func (b *bufferWriter) Flush() {}

func (b *bufferWriter) statusCode() int {
	if b.status == 0 {
		return nethttp.StatusOK
	}
	return b.status
}
