package http_test

import (
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// regionAPI is a dev server of region behind its HTTP API (httptest).
func regionAPI(b testing.TB, region string, regions agenthttp.RegionSource) *httptest.Server {
	b.Helper()
	log := slog.New(slog.DiscardHandler)
	s := testcluster.Server(b, server.Config{BindAddr: "127.0.0.1", NumSchedulers: 1, Logger: log, NodeName: region})
	cfg := agenthttp.Config{Server: serverstate.Bind(s), Logger: log, Region: region, ACL: s.ACL()}
	if regions != nil {
		cfg.Regions = regions
	}
	h, err := agenthttp.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	b.Cleanup(ts.Close)
	return ts
}

// BenchmarkCrossRegionGET measures what forwarding by region adds to a
// read: GET /v1/jobs answered by us's server directly (local) and through
// eu's with ?region=us (forwarded: one more HTTP hop on loopback, as a
// caller of another region's agent pays), 2,000 requests each, one at a
// time; it reports each latency's p50 and p99 in microseconds.
func BenchmarkCrossRegionGET(b *testing.B) {
	us := regionAPI(b, "us", nil)
	eu := regionAPI(b, "eu", fakeRegions{"eu": nil, "us": {strings.TrimPrefix(us.URL, "http://")}})
	client := &nethttp.Client{Transport: &nethttp.Transport{MaxIdleConnsPerHost: 4}}
	const n = 2000
	measure := func(url string) (p50, p99 float64) {
		d := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			r, err := client.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if r.StatusCode != 200 {
				b.Fatalf("GET %s = %d", url, r.StatusCode)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		us := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e3 }
		return us(0.50), us(0.99)
	}
	var lp50, lp99, fp50, fp99 float64
	b.ResetTimer()
	for range b.N {
		lp50, lp99 = measure(us.URL + "/v1/jobs")
		fp50, fp99 = measure(eu.URL + "/v1/jobs?region=us")
	}
	b.ReportMetric(lp50, "local-p50-us")
	b.ReportMetric(lp99, "local-p99-us")
	b.ReportMetric(fp50, "fwd-p50-us")
	b.ReportMetric(fp99, "fwd-p99-us")
}
