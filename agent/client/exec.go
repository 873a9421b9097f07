package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/coder/websocket"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// handleExec serves GET /v1/client/allocation/{alloc}/exec: a websocket of
// api.ExecStreamFrame JSON text messages running a command in a task via
// the driver's Execer. Errors found before the upgrade are JSON errors.
func (c *Client) handleExec(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) {
	q := r.URL.Query()
	var command []string
	if err := json.Unmarshal([]byte(q.Get("command")), &command); err != nil {
		api.WriteError(w, badRequest("command must be a JSON array of strings: "+err.Error()))
		return
	}
	if len(command) == 0 || command[0] == "" {
		api.WriteError(w, badRequest("command must not be empty"))
		return
	}
	tty := false
	switch q.Get("tty") {
	case "", "false":
	case "true":
		tty = true
	default:
		api.WriteError(w, badRequest("tty must be true or false"))
		return
	}
	name := q.Get("task")
	if name == "" {
		names := ar.TaskNames()
		if len(names) != 1 {
			api.WriteError(w, badRequest(fmt.Sprintf("allocation has %d tasks: task is required", len(names))))
			return
		}
		name = names[0]
	}
	tr := ar.Task(name)
	if tr == nil {
		api.WriteError(w, api.Errorf(api.ErrNotFound, "unknown task "+name))
		return
	}
	execer, taskID, err := tr.ExecTarget()
	if err != nil {
		if errors.Is(err, drivers.ErrNotSupported) {
			err = api.Errorf(api.ErrBadRequest, err.Error())
		}
		api.WriteError(w, restError(err))
		return
	}
	// A browser that offered its token as a subprotocol needs one of its
	// protocols chosen back (drover.exec); the token is never echoed.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{api.WebSocketExecProtocol}})
	if err != nil {
		return // Accept has written the HTTP error
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	c.runExec(r.Context(), conn, execer, taskID, command, tty)
}

// runExec pumps frames between conn and one ExecTask call. It owns the
// frame reader goroutine and waits for it before returning.
func (c *Client) runExec(ctx context.Context, conn *websocket.Conn, execer drivers.Execer, taskID string, command []string, tty bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stdin is an *os.File so that the command gets the pipe itself:
	// os/exec then does not wait for a stdin copier after the command
	// exits while the client still holds stdin open.
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = conn.Close(websocket.StatusInternalError, "stdin pipe")
		return
	}
	resize := make(chan drivers.TerminalSize, 1)
	send := &frameSender{ctx: ctx, conn: conn}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer pw.Close()
		for {
			var f api.ExecStreamFrame
			_, b, err := conn.Read(ctx)
			if err != nil {
				cancel() // the client went away: stop the command
				return
			}
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			if s := f.TTYSize; s != nil && s.Height > 0 && s.Width > 0 {
				ts := drivers.TerminalSize{Height: uint16(s.Height), Width: uint16(s.Width)}
				select {
				case resize <- ts:
				default: // replace a size the driver has not taken yet
					select {
					case <-resize:
					default:
					}
					resize <- ts
				}
			}
			if f.Stdin != nil {
				if len(f.Stdin.Data) > 0 {
					if _, err := pw.Write(f.Stdin.Data); err != nil {
						continue // command gone; keep reading until close
					}
				}
				if f.Stdin.Close {
					_ = pw.Close()
				}
			}
		}
	}()

	opts := &drivers.ExecOptions{Command: command, TTY: tty, Stdin: pr,
		Stdout: send.stream(false), Stderr: send.stream(true)}
	if tty {
		opts.Resize = resize
	}
	res, err := execer.ExecTask(ctx, taskID, opts)
	_ = pr.Close()
	if err != nil {
		c.log.Debug("alloc exec failed", "task", taskID, "err", err)
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		_ = conn.Close(websocket.StatusInternalError, msg)
	} else {
		_ = send.frame(&api.ExecStreamFrame{Exited: true, Result: &api.ExecStreamResult{ExitCode: res.ExitCode}})
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}
	cancel()
	wg.Wait()
}

// frameSender serialises frame writes to conn.
type frameSender struct {
	ctx  context.Context
	conn *websocket.Conn
	mu   sync.Mutex
}

func (s *frameSender) frame(f *api.ExecStreamFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.Write(s.ctx, websocket.MessageText, b)
}

func (s *frameSender) stream(stderr bool) streamWriter { return streamWriter{s: s, stderr: stderr} }

// streamWriter turns writes into stdout or stderr frames.
type streamWriter struct {
	s      *frameSender
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	d := &api.ExecStreamData{Data: append([]byte(nil), p...)}
	f := &api.ExecStreamFrame{Stdout: d}
	if w.stderr {
		f = &api.ExecStreamFrame{Stderr: d}
	}
	if err := w.s.frame(f); err != nil {
		return 0, err
	}
	return len(p), nil
}
