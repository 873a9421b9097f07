package http_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// startListening serves a test API's config (with mod applied) through
// Start on a real listener, as the agent does, and returns its address.
func startListening(t *testing.T, mod func(*agenthttp.Config)) string {
	t.Helper()
	var cfg agenthttp.Config
	newTestAPI(t, func(c *agenthttp.Config) { mod(c); cfg = *c })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	h, err := agenthttp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("http shutdown: %v", err)
		}
	})
	return ln.Addr().String()
}

// A client dripping a request body used to hold its connection (and the
// handler) for as long as it liked: 200 such clients held the agent for
// 30 s. With limits.http_read_timeout the server stops waiting: the
// request fails and the connection is closed while the client is still
// sending.
func TestHTTPReadTimeoutCutsDrippingBody(t *testing.T) {
	addr := startListening(t, func(c *agenthttp.Config) { c.ReadTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const size = 2000
	if _, err := io.WriteString(c, "POST /v1/jobs/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 20 ms: the whole body would take 40 s
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range size {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server still waiting for the body after %v (read %q)", time.Since(start), got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("connection ended after %v, want soon after the 300ms read timeout", took)
	}
	t.Logf("after %v the server answered %.80q and closed", time.Since(start), got)
	if len(got) > 0 && (!strings.HasPrefix(string(got), "HTTP/1.1 400") || !strings.Contains(string(got), "read timeout")) {
		t.Errorf("dripped request answered %q, want a 400 naming the read timeout or a closed connection", got)
	}
}

// The read timeout bounds reading the request only: a blocking query that
// waits longer than it still answers.
func TestHTTPReadTimeoutSparesBlockingQueries(t *testing.T) {
	addr := startListening(t, func(c *agenthttp.Config) { c.ReadTimeout = 300 * time.Millisecond })
	r, err := nethttp.Get("http://" + addr + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	idx := r.Header.Get(api.HeaderIndex)
	start := time.Now()
	r, err = nethttp.Get("http://" + addr + "/v1/jobs?wait=1500ms&index=" + idx)
	if err != nil {
		t.Fatalf("blocking query: %v", err)
	}
	defer r.Body.Close()
	if took := time.Since(start); r.StatusCode != 200 || took < time.Second {
		t.Errorf("blocking query at index %s: %d after %v, want 200 after its 1.5s wait", idx, r.StatusCode, took)
	}
}

// limits.http_max_conns_per_client: N connections from one IP are served,
// the next is answered 429 and closed, and once one closes a new one is
// served again. Loopback is not exempt (as Nomad).
func TestHTTPMaxConnsPerClient(t *testing.T) {
	const limit = 5
	addr := startListening(t, func(c *agenthttp.Config) { c.MaxConnsPerClient = limit })
	// request sends one keep-alive request on c and returns the status line.
	request := func(c net.Conn, br *bufio.Reader) (string, error) {
		if _, err := io.WriteString(c, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return "", err
		}
		r, err := nethttp.ReadResponse(br, nil)
		if err != nil {
			return "", err
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.Status, nil
	}
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if st, err := request(c, bufio.NewReader(c)); err != nil || !strings.HasPrefix(st, "200") {
			t.Fatalf("connection %d of %d: %q %v, want 200", i+1, limit, st, err)
		}
	}
	extra := func() (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return request(c, bufio.NewReader(c))
	}
	st, err := extra()
	if err != nil || !strings.HasPrefix(st, "429") {
		t.Fatalf("connection %d: %q %v, want 429 Too Many Requests", limit+1, st, err)
	}
	// The held ones are still served.
	if st, err := request(held[0], bufio.NewReader(held[0])); err != nil || !strings.HasPrefix(st, "200") {
		t.Fatalf("held connection after the refusal: %q %v, want 200", st, err)
	}
	held[1].Close()
	testproc.Eventually(t, 10*time.Second, "a new connection served (200) after closing one", func() bool {
		st, err := extra()
		return err == nil && strings.HasPrefix(st, "200")
	})
}

// drover's own traffic (servers forwarding to the leader or to client
// nodes) is HTTP: connections from a configured server's IP are not
// counted, or a follower serving many clients would be refused.
func TestHTTPMaxConnsExemptsServers(t *testing.T) {
	addr := startListening(t, func(c *agenthttp.Config) {
		c.MaxConnsPerClient = 1
		c.Servers = []string{"http://127.0.0.1:1"}
	})
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		r, err := nethttp.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("connection %d from a configured server's IP: %v %v, want 200", i+1, r, err)
		}
		r.Body.Close()
	}
}
