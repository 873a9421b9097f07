package http

import (
	"fmt"
	"math"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/drover/drover/api"
)

// UsageState is the usage-ledger read side of Store: rows grouped by by
// for the buckets starting in [from, to) (Unix seconds), running allocs
// counted to now (Unix ns).
type UsageState interface {
	Usage(by string, from, to, now int64) ([]api.UsageRow, error)
}

// DefaultUsageWindow is the span GET /v1/usage reports without from.
const DefaultUsageWindow = 24 * time.Hour

// maxUsageSpan bounds to-from of one usage query (the longest retention).
const maxUsageSpan = api.MaxUsageRetentionHours * int64(time.Hour/time.Second)

// usageHandlers serve the usage ledger (showback).
type usageHandlers struct{ s *HTTPServer }

// get answers GET /v1/usage?by=queue|namespace|job&from=&to=[&format=csv]
// (from and to: Unix seconds or RFC3339; default the last 24 hours).
// Cost is GPU hours times Config.UsagePrices per model.
func (h *usageHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	s := h.s
	if s.role.State == nil {
		return nil, errNoServer()
	}
	q := r.URL.Query()
	by := q.Get("by")
	if by == "" {
		by = api.UsageByQueue
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "csv" {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("format=%q: want json or csv", format))
	}
	now := time.Now()
	to, err := usageTime(q.Get("to"), "to", now.Unix())
	if err != nil {
		return nil, err
	}
	from, err := usageTime(q.Get("from"), "from", to-int64(DefaultUsageWindow/time.Second))
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("from (%d) is after to (%d)", from, to))
	}
	if to-from > maxUsageSpan {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("from..to spans more than %d hours", api.MaxUsageRetentionHours))
	}
	rows, err := s.state(nil).Usage(by, from, to, now.UnixNano())
	if err != nil {
		return nil, err
	}
	PriceUsage(rows, s.cfg.UsagePrices)
	out := &api.UsageResponse{By: by, From: from, To: to, Rows: rows}
	if format != "csv" {
		return out, nil
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage-`+by+`.csv"`)
	w.WriteHeader(nethttp.StatusOK)
	if err := api.WriteUsageCSV(w, out); err != nil {
		s.log.Warn("write usage csv", "err", err)
	}
	return nil, errWritten
}

// PriceUsage sets each row's Cost: its GPU hours per model times the
// model's price (models without a price cost nothing).
func PriceUsage(rows []api.UsageRow, prices map[string]float64) {
	if len(prices) == 0 {
		return
	}
	for i := range rows {
		var c float64
		for m, secs := range rows[i].GPUSeconds {
			c += secs / 3600 * prices[m]
		}
		rows[i].Cost = c
	}
}

// usageTime parses a usage bound: Unix seconds or RFC3339 ("" is def).
func usageTime(v, name string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(time.Second) {
			return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%s=%q: out of range", name, v))
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%s=%q: want Unix seconds or RFC3339", name, v))
	}
	if t.Unix() < 0 {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%s=%q: before 1970", name, v))
	}
	return t.Unix(), nil
}
