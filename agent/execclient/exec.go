package execclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/drover/drover/api"
)

// Request names what to run where.
type Request struct {
	AllocID string
	Task    string // empty: the alloc's only task
	Command []string
	TTY     bool
	Stdin   io.Reader // nil: stdin is closed at once
	Stdout  io.Writer
	Stderr  io.Writer // with TTY the remote sends everything as stdout
	// Resize delivers terminal sizes to forward (TTY only); may be nil.
	Resize <-chan api.TerminalSize
}

// ErrNoExitCode is returned when the stream ends without an exited frame.
var ErrNoExitCode = errors.New("exec stream ended without an exit code")

// Exec runs req through c's agent and returns the remote exit code. An
// error before the upgrade is the agent's JSON *api.Error.
func Exec(ctx context.Context, c *api.Client, req *Request) (int, error) {
	u := c.Address + api.ExecPath(req.AllocID, req.Task, req.Command, req.TTY)
	if c.Region != "" { // another region's servers run it, through c's agent
		u += "&region=" + url.QueryEscape(c.Region)
	}
	switch {
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := &websocket.DialOptions{HTTPClient: c.HTTP, HTTPHeader: c.Headers.Clone()}
	conn, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSwitchingProtocols {
			return -1, apiError(resp, err)
		}
		return -1, fmt.Errorf("exec: dial %s: %w", u, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 22)

	var mu sync.Mutex
	write := func(f *api.ExecStreamFrame) error {
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		return conn.Write(ctx, websocket.MessageText, b)
	}

	var wg sync.WaitGroup
	if req.Resize != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case s, ok := <-req.Resize:
					if !ok {
						return
					}
					if write(&api.ExecStreamFrame{TTYSize: &s}) != nil {
						return
					}
				}
			}
		}()
	}
	// The stdin pump is not waited for: a Read on a terminal cannot be
	// interrupted, and its goroutine ends at the next read or at exit.
	go func() {
		if req.Stdin != nil {
			buf := make([]byte, 32*1024)
			for {
				n, err := req.Stdin.Read(buf)
				if n > 0 {
					if write(&api.ExecStreamFrame{Stdin: &api.ExecStreamData{Data: append([]byte(nil), buf[:n]...)}}) != nil {
						return
					}
				}
				if err != nil {
					break
				}
			}
		}
		_ = write(&api.ExecStreamFrame{Stdin: &api.ExecStreamData{Close: true}})
	}()
	defer wg.Wait()
	defer cancel()

	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 && st != websocket.StatusNormalClosure {
				var ce websocket.CloseError
				errors.As(err, &ce)
				return -1, fmt.Errorf("exec: %s", ce.Reason)
			}
			return -1, fmt.Errorf("exec: %w: %w", ErrNoExitCode, err)
		}
		var f api.ExecStreamFrame
		if err := json.Unmarshal(b, &f); err != nil {
			return -1, fmt.Errorf("exec: bad frame: %w", err)
		}
		if f.Stdout != nil && len(f.Stdout.Data) > 0 && req.Stdout != nil {
			if _, err := req.Stdout.Write(f.Stdout.Data); err != nil {
				return -1, fmt.Errorf("exec: write stdout: %w", err)
			}
		}
		if f.Stderr != nil && len(f.Stderr.Data) > 0 && req.Stderr != nil {
			if _, err := req.Stderr.Write(f.Stderr.Data); err != nil {
				return -1, fmt.Errorf("exec: write stderr: %w", err)
			}
		}
		if f.Exited {
			code := 0
			if f.Result != nil {
				code = f.Result.ExitCode
			}
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return code, nil
		}
	}
}

// apiError decodes the agent's JSON error from a refused upgrade.
func apiError(resp *http.Response, dialErr error) error {
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb api.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
			eb.Error.Status = resp.StatusCode
			return eb.Error
		}
	}
	return &api.Error{Code: fmt.Sprintf("http_%d", resp.StatusCode), Status: resp.StatusCode, Message: dialErr.Error()}
}
