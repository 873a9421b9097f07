package qemu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/digitalocean/go-qemu/qmp"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// qmpDialTimeout bounds connecting to the QMP socket.
const qmpDialTimeout = 2 * time.Second

// ErrQMP: the VM's QMP monitor did not answer.
var ErrQMP = errors.New("qmp monitor unavailable")

// qmpClient runs QMP commands against one VM. A QMP server serves one
// client at a time, so commands are serialised; each one connects,
// negotiates, runs and disconnects (the agent may restart in between).
//
// go-qemu's monitor has no deadlines: a session runs on its own goroutine
// and a caller whose ctx ends stops waiting for it. The goroutine ends
// when qemu answers or its socket closes (qemu exits or is killed);
// Close waits for every session goroutine.
type qmpClient struct {
	socket string

	mu sync.Mutex // one session at a time
	wg sync.WaitGroup
}

func newQMPClient(socket string) *qmpClient { return &qmpClient{socket: socket} }

// do runs fn in a QMP session, giving up waiting when ctx ends.
func (q *qmpClient) do(ctx context.Context, what string, fn func(*raw.Monitor) error) error {
	done := make(chan error, 1)
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.mu.Lock()
		defer q.mu.Unlock()
		if ctx.Err() != nil { // the caller gave up while we queued
			done <- ctx.Err()
			return
		}
		done <- session(q.socket, fn)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("qmp %s: %w: %w", what, ErrQMP, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("qmp %s: %w: %w", what, ErrQMP, ctx.Err())
	}
}

func session(socket string, fn func(*raw.Monitor) error) error {
	mon, err := qmp.NewSocketMonitor("unix", socket, qmpDialTimeout)
	if err != nil {
		return err
	}
	if err := mon.Connect(); err != nil {
		_ = mon.Disconnect()
		return err
	}
	err = fn(raw.NewMonitor(mon))
	_ = mon.Disconnect() // the command's outcome is what counts
	return err
}

// Status returns the VM's run state ("running", "paused", "shutdown" ...).
func (q *qmpClient) Status(ctx context.Context) (string, error) {
	var st raw.StatusInfo
	err := q.do(ctx, "query-status", func(m *raw.Monitor) error {
		var err error
		st, err = m.QueryStatus()
		return err
	})
	if err != nil {
		return "", err
	}
	return st.Status.String(), nil
}

// Powerdown presses the VM's ACPI power button.
func (q *qmpClient) Powerdown(ctx context.Context) error {
	return q.do(ctx, "system_powerdown", func(m *raw.Monitor) error { return m.SystemPowerdown() })
}

// Quit makes qemu exit at once. qemu may close the socket before its
// answer arrives; the caller watches the process to know it is gone.
func (q *qmpClient) Quit(ctx context.Context) error {
	return q.do(ctx, "quit", func(m *raw.Monitor) error { return m.Quit() })
}

// Close waits for every session goroutine; call it once qemu is gone.
func (q *qmpClient) Close() { q.wg.Wait() }
