package client_test

// alloc exec end to end: a real in-memory dev server behind the real HTTP
// API, a real client running a raw_exec task (the drover supervisor
// binary), and the websocket exec endpoint, directly and through a
// server-only agent's /v1/client proxy.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/execclient"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/rawexec"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

func TestAllocExecRawExec(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server and builds the drover binary")
	}
	bin, cleanup, err := testproc.DroverBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no drover binary: %v", err)
	}
	t.Cleanup(cleanup)

	log := slog.New(slog.DiscardHandler)
	s := testcluster.Server(t, server.Config{Logger: log, NodeName: "srv"})
	lazy := &lazyClient{}
	h, err := agenthttp.New(agenthttp.Config{Server: serverstate.Bind(s), Client: lazy, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)
	// A server-only agent: /v1/client/... for the alloc is proxied to ts.
	hp, err := agenthttp.New(agenthttp.Config{Server: serverstate.Bind(s), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	tsProxy := httptest.NewServer(hp.Handler())
	t.Cleanup(tsProxy.Close)

	rawFactory := func(o drivers.Options) (drivers.Driver, error) {
		o.Config = map[string]any{"executor_path": bin}
		return rawexec.New(o)
	}
	dataDir := t.TempDir()
	// The client's tasks outlive it (a restarted client reattaches): kill
	// what it started once it has shut down (cleanups run last first).
	t.Cleanup(func() { testproc.Reap(nil, dataDir) })
	c, err := client.New(&client.Config{DataDir: dataDir, Servers: []string{ts.URL}, NodeName: "n1",
		HTTPAddr: ts.Listener.Addr().String(), DevMode: true, Logger: log,
		Drivers: map[string]drivers.Factory{rawexec.Name: rawFactory}})
	if err != nil {
		t.Fatal(err)
	}
	lazy.c.Store(c)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Shutdown(ctx)
	})
	ac := api.NewClient(ts.URL)
	ctx := context.Background()
	testcluster.WaitState(t, s, 20*time.Second, "node ready", func() bool {
		n, _, err := ac.Node(ctx, c.NodeID(), nil)
		return err == nil && n.Status == api.NodeStatusReady && n.Attributes["driver.raw_exec"] == "1"
	})
	job := &api.Job{ID: "sh", Name: "sh", Type: api.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: rawexec.Name,
			Config:    map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
			Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if _, err := ac.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatalf("register job: %v", err)
	}
	var allocID string
	testcluster.WaitState(t, s, 20*time.Second, "task running", func() bool {
		as, _, err := ac.JobAllocations(ctx, "sh", nil)
		if err != nil || len(as) != 1 {
			return false
		}
		allocID = as[0].ID
		st := as[0].TaskStates["t"]
		return st != nil && st.State == api.TaskStateRunning
	})
	t.Cleanup(func() { _, _ = ac.DeregisterJob(context.Background(), "sh", false, nil) })

	script := []string{"/bin/sh", "-c", "read x; echo got:$x; echo err >&2; exit 7"}
	for name, addr := range map[string]string{"direct": ts.URL, "proxied": tsProxy.URL} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			// Task omitted: the group has one task.
			code, err := execclient.Exec(ctx, api.NewClient(addr), &execclient.Request{AllocID: allocID,
				Command: script, Stdin: strings.NewReader("hi\n"), Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatalf("exec: %v", err)
			}
			if code != 7 || stdout.String() != "got:hi\n" || stderr.String() != "err\n" {
				t.Errorf("exit %d stdout %q stderr %q, want 7 %q %q", code, stdout.String(), stderr.String(), "got:hi\n", "err\n")
			}
		})
	}

	t.Run("stdin left open", func(t *testing.T) {
		// The command exits without reading stdin, which the caller never
		// closes: the exec must still end with the exit code.
		pr, pw := io.Pipe()
		defer pw.Close()
		var stdout bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		code, err := execclient.Exec(ctx, ac, &execclient.Request{AllocID: allocID, Task: "t",
			Command: []string{"/bin/sh", "-c", "echo out"}, Stdin: pr, Stdout: &stdout})
		if err != nil || code != 0 || stdout.String() != "out\n" {
			t.Errorf("exec = %d, %v, stdout %q", code, err, stdout.String())
		}
	})

	t.Run("tty", func(t *testing.T) {
		var stdout bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resize := make(chan api.TerminalSize, 1)
		resize <- api.TerminalSize{Height: 33, Width: 101}
		// The size frame and stdin travel independently: the shell polls
		// (bounded) until the size has been applied, then prints it.
		script := `read x; i=0; while [ "$(stty size)" != "33 101" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; stty size; test -t 0`
		code, err := execclient.Exec(ctx, ac, &execclient.Request{AllocID: allocID, Task: "t", TTY: true,
			Command: []string{"/bin/sh", "-c", script}, Stdin: strings.NewReader("go\n"),
			Stdout: &stdout, Resize: resize})
		if err != nil || code != 0 {
			t.Fatalf("exec = %d, %v, output %q", code, err, stdout.String())
		}
		if !strings.Contains(stdout.String(), "33 101") {
			t.Errorf("tty output %q lacks the size 33 101", stdout.String())
		}
	})

	t.Run("client goes away", func(t *testing.T) {
		// Dropping the websocket kills the remote command.
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		pidCh := make(chan int, 1)
		out := writerFunc(func(p []byte) (int, error) {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(p))); err == nil {
				pidCh <- pid
				cancel()
			}
			return len(p), nil
		})
		_, err := execclient.Exec(ctx, ac, &execclient.Request{AllocID: allocID, Task: "t",
			Command: []string{"/bin/sh", "-c", "echo $$; exec sleep 300"}, Stdout: out})
		if err == nil {
			t.Fatal("exec survived its context")
		}
		var pid int
		select {
		case pid = <-pidCh:
		default:
			t.Fatalf("no pid printed: %v", err)
		}
		testproc.Eventually(t, 20*time.Second, "remote command killed", func() bool {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			return err != nil || strings.Contains(string(b), ") Z ")
		})
	})

	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"unknown alloc", api.ExecPath("00000000-0000-0000-0000-000000000000", "t", []string{"true"}, false), http.StatusNotFound},
		{"unknown task", api.ExecPath(allocID, "nope", []string{"true"}, false), http.StatusNotFound},
		{"bad command", "/v1/client/allocation/" + allocID + "/exec?task=t&command=%5Bnot-json", http.StatusBadRequest},
		{"empty command", api.ExecPath(allocID, "t", []string{}, false), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A plain GET (no upgrade) gets the JSON error before any
			// upgrade is attempted.
			resp, err := http.Get(ts.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var eb api.ErrorBody
			if resp.StatusCode != tc.status || jsonDecode(resp, &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
				t.Errorf("status %d body %+v, want %d with a JSON error", resp.StatusCode, eb.Error, tc.status)
			}
		})
	}
	t.Run("error through the websocket client", func(t *testing.T) {
		_, err := execclient.Exec(ctx, ac, &execclient.Request{AllocID: allocID, Task: "nope", Command: []string{"true"}})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
			t.Errorf("exec into unknown task: %v, want a 404 *api.Error", err)
		}
	})
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
