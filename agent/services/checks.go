package services

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// maxOutput bounds what a check keeps of a response or a script's output.
const maxOutput = 4 << 10

// result is one run of a check.
type result struct {
	health string // api.ServiceHealth*
	code   int
	output string
}

// target is where a check runs: an address for network checks, a task for
// script checks.
type target struct {
	addr string // host:port
	exec func() (drivers.Execer, string, error)
}

// runCheck runs one check with its timeout.
func runCheck(ctx context.Context, c *api.ServiceCheck, t target) result {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Type {
	case "http":
		return httpCheck(ctx, c, t.addr)
	case "tcp":
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", t.addr)
		if err != nil {
			return result{health: api.ServiceHealthCritical, output: err.Error()}
		}
		conn.Close()
		return result{health: api.ServiceHealthPassing, output: "TCP connect " + t.addr + ": Success"}
	case "grpc":
		return grpcCheck(ctx, c, t.addr)
	case "script":
		return scriptCheck(ctx, c, t)
	}
	return result{health: api.ServiceHealthCritical, output: fmt.Sprintf("unknown check type %q", c.Type)}
}

func httpCheck(ctx context.Context, c *api.ServiceCheck, addr string) result {
	scheme := "http"
	if c.Protocol == "https" {
		scheme = "https"
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+addr+path, body)
	if err != nil {
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: c.TLSSkipVerify, ServerName: c.TLSServerName}} // #nosec G402 -- the job asks for it
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	r := result{code: resp.StatusCode, output: fmt.Sprintf("HTTP %s %s: %s", method, path, resp.Status)}
	if len(out) > 0 {
		r.output += "\n" + string(out)
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.health = api.ServiceHealthPassing
	case resp.StatusCode == http.StatusTooManyRequests:
		r.health = api.ServiceHealthWarning
	default:
		r.health = api.ServiceHealthCritical
	}
	return r
}

func grpcCheck(ctx context.Context, c *api.ServiceCheck, addr string) result {
	creds := insecure.NewCredentials()
	if c.GRPCUseTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: c.TLSSkipVerify, ServerName: c.TLSServerName}) // #nosec G402 -- the job asks for it
	}
	conn, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(creds)) // grpc v1.59: no NewClient yet
	if err != nil {
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: c.GRPCService})
	if err != nil {
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	st := resp.GetStatus()
	if st == healthpb.HealthCheckResponse_SERVING {
		return result{health: api.ServiceHealthPassing, output: "gRPC health: " + st.String()}
	}
	return result{health: api.ServiceHealthCritical, output: "gRPC health: " + st.String()}
}

// limitedBuffer keeps the first maxOutput bytes written.
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func scriptCheck(ctx context.Context, c *api.ServiceCheck, t target) result {
	if t.exec == nil {
		return result{health: api.ServiceHealthCritical, output: "script check: no task to run in"}
	}
	e, id, err := t.exec()
	if err != nil {
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	var out limitedBuffer
	res, err := e.ExecTask(ctx, id, &drivers.ExecOptions{Command: append([]string{c.Command}, c.Args...), Stdout: &out, Stderr: &out})
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return result{health: api.ServiceHealthCritical, output: "script check timed out\n" + out.b.String()}
	case err != nil:
		return result{health: api.ServiceHealthCritical, output: err.Error()}
	}
	r := result{code: res.ExitCode, output: out.b.String()}
	switch res.ExitCode {
	case 0:
		r.health = api.ServiceHealthPassing
	case 1:
		r.health = api.ServiceHealthWarning
	default:
		r.health = api.ServiceHealthCritical
	}
	return r
}
