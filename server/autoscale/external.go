package autoscale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
	"unicode"
)

// The external provider protocol: drover starts the command once and
// writes one JSON request per line to its stdin; the command answers each
// with one JSON line on stdout, in order. Anything it writes to stderr is
// logged by the caller's process, not read.
//
//	{"op":"create","pool":"gpu","shape":{...Shape...},"n":2}  -> {"ids":["i-1","i-2"]}
//	{"op":"destroy","ids":["i-1"]}                            -> {}
//	{"op":"list"}                                             -> {"instances":[{"id":"i-2","pool":"gpu","spot":true,"price":24.5,"created":"2026-01-02T15:04:05Z"}]}
//	{"op":"interruptions"}                                    -> {"interruptions":[{"id":"i-2","deadline":"2m"}]}
//
// Any answer may be {"error":"message"} instead. A node made for an
// instance registers with node meta drover.instance = its ID (or is named
// after it).

// Bounds on what the command may answer.
const (
	maxExternalLine      = 1 << 20
	maxExternalInstances = 10000
	maxInstanceID        = 256
	// DefaultExternalTimeout bounds one request.
	DefaultExternalTimeout = time.Minute
)

// ErrExternal is returned (wrapped) for a broken answer or command.
var ErrExternal = errors.New("external provider")

// External is the provider behind a command speaking JSON lines.
type External struct {
	// Command and its arguments (from the server's configuration only).
	Command []string
	// Timeout per request (DefaultExternalTimeout when 0).
	Timeout time.Duration
	// Stderr receives the command's stderr (discarded when nil).
	Stderr io.Writer

	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done chan struct{}
}

var _ Provider = (*External)(nil)

type externalRequest struct {
	Op    string   `json:"op"`
	Pool  string   `json:"pool,omitempty"`
	Shape *Shape   `json:"shape,omitempty"`
	N     int      `json:"n,omitempty"`
	IDs   []string `json:"ids,omitempty"`
}

type externalInterruption struct {
	ID       string `json:"id"`
	Deadline string `json:"deadline"`
}

type externalResponse struct {
	Error         string                 `json:"error,omitempty"`
	IDs           []string               `json:"ids,omitempty"`
	Instances     []Instance             `json:"instances,omitempty"`
	Interruptions []externalInterruption `json:"interruptions,omitempty"`
}

// decodeExternal parses and checks one answer to a request of op (n: the
// count asked by create): unknown fields are refused, IDs are short
// printable strings, lists are bounded, deadlines are durations. An
// {"error"} answer returns the response with the error; a malformed one
// returns no response.
func decodeExternal(line []byte, op string, n int) (*externalResponse, []Interruption, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s answer: %s", ErrExternal, op, fmt.Sprintf(format, args...))
	}
	if len(line) > maxExternalLine {
		return nil, nil, bad("longer than %d bytes", maxExternalLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var r externalResponse
	if err := dec.Decode(&r); err != nil {
		return nil, nil, bad("%v", err)
	}
	if dec.More() {
		return nil, nil, bad("more than one JSON value on the line")
	}
	if r.Error != "" {
		if len(r.Error) > 1024 {
			r.Error = r.Error[:1024]
		}
		return &r, nil, bad("%s", r.Error) // a well-formed refusal: r is returned with the error
	}
	if len(r.IDs) > maxExternalInstances || len(r.Instances) > maxExternalInstances || len(r.Interruptions) > maxExternalInstances {
		return nil, nil, bad("more than %d entries", maxExternalInstances)
	}
	if op == "create" && len(r.IDs) > n {
		return nil, nil, bad("%d ids for %d asked", len(r.IDs), n)
	}
	for _, id := range r.IDs {
		if err := checkInstanceID(id); err != nil {
			return nil, nil, bad("%v", err)
		}
	}
	for _, in := range r.Instances {
		if err := checkInstanceID(in.ID); err != nil {
			return nil, nil, bad("%v", err)
		}
		if in.Price < 0 || len(in.Pool) > 128 {
			return nil, nil, bad("instance %q: bad pool or price", in.ID)
		}
	}
	var notices []Interruption
	for _, in := range r.Interruptions {
		if err := checkInstanceID(in.ID); err != nil {
			return nil, nil, bad("%v", err)
		}
		d, err := time.ParseDuration(in.Deadline)
		if err != nil || d < 0 || d > 24*time.Hour {
			return nil, nil, bad("interruption of %q: deadline %q: want a duration of 0 to 24h", in.ID, in.Deadline)
		}
		notices = append(notices, Interruption{ID: in.ID, Deadline: d})
	}
	return &r, notices, nil
}

func checkInstanceID(id string) error {
	if id == "" || len(id) > maxInstanceID {
		return fmt.Errorf("instance id of %d bytes: want 1 to %d", len(id), maxInstanceID)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("instance id %q: printable characters without spaces only", id)
		}
	}
	return nil
}

// start runs the command if it is not running; e.mu is held.
func (e *External) start() error {
	if e.cmd != nil {
		select {
		case <-e.done:
			e.cmd = nil // exited: start it again
		default:
			return nil
		}
	}
	if len(e.Command) == 0 {
		return fmt.Errorf("%w: no command", ErrExternal)
	}
	cmd := exec.Command(e.Command[0], e.Command[1:]...)
	cmd.Stderr = e.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExternal, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExternal, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %v", ErrExternal, e.Command[0], err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	e.cmd, e.in, e.out, e.done = cmd, in, bufio.NewReaderSize(out, 64<<10), done
	return nil
}

// stop kills the command; e.mu is held.
func (e *External) stop() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Kill()
	<-e.done
	e.cmd = nil
}

// Close stops the command.
func (e *External) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stop()
	return nil
}

// call sends one request and reads its answer; a command that does not
// answer in time, or answers garbage, is killed (started again next call).
func (e *External) call(ctx context.Context, req externalRequest) (*externalResponse, []Interruption, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.start(); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExternalTimeout
	}
	type answer struct {
		line []byte
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		if _, err := e.in.Write(append(b, '\n')); err != nil {
			ch <- answer{err: err}
			return
		}
		line, err := readLine(e.out, maxExternalLine)
		ch <- answer{line, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.err != nil {
			e.stop()
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrExternal, req.Op, a.err)
		}
		r, notices, err := decodeExternal(a.line, req.Op, req.N)
		if err != nil && r == nil {
			e.stop() // garbage: the stream may be out of step
		}
		if err != nil {
			return nil, nil, err
		}
		return r, notices, nil
	case <-t.C:
		e.stop()
		<-ch
		return nil, nil, fmt.Errorf("%w: %s: no answer in %v", ErrExternal, req.Op, timeout)
	case <-ctx.Done():
		e.stop()
		<-ch
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrExternal, req.Op, ctx.Err())
	}
}

// readLine reads one line of at most limit bytes (without the newline).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit+1 {
			return nil, fmt.Errorf("answer longer than %d bytes", limit)
		}
		if err == nil {
			return bytes.TrimRight(buf, "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// Create implements Provider.
func (e *External) Create(ctx context.Context, pool string, shape Shape, n int) ([]string, error) {
	r, _, err := e.call(ctx, externalRequest{Op: "create", Pool: pool, Shape: &shape, N: n})
	if err != nil {
		return nil, err
	}
	return r.IDs, nil
}

// Destroy implements Provider.
func (e *External) Destroy(ctx context.Context, ids []string) error {
	_, _, err := e.call(ctx, externalRequest{Op: "destroy", IDs: ids})
	return err
}

// List implements Provider.
func (e *External) List(ctx context.Context) ([]Instance, error) {
	r, _, err := e.call(ctx, externalRequest{Op: "list"})
	if err != nil {
		return nil, err
	}
	return r.Instances, nil
}

// Interruptions implements Provider.
func (e *External) Interruptions(ctx context.Context) ([]Interruption, error) {
	_, notices, err := e.call(ctx, externalRequest{Op: "interruptions"})
	return notices, err
}
