package autoscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Local is the provider of real client agents on this host, for e2e
// tests: each instance is a `drover agent -client` child process with its
// own data dir under Dir, joining Servers in the instance's pool, named
// after the instance, with node meta drover.instance (and drover.spot for
// a spot shape). Shapes with GPUs get simulated ones (-dev-gpus DevGPUs).
type Local struct {
	// Binary is the drover executable (default: this process's).
	Binary  string
	Servers []string
	Dir     string
	// DevGPUs is the -dev-gpus model of GPU shapes (default dgxh100).
	DevGPUs string
	// Stdout and Stderr receive the agents' output (discarded when nil).
	Stdout, Stderr io.Writer
	// StopTimeout is how long a destroyed agent gets after SIGTERM.
	StopTimeout time.Duration

	mu      sync.Mutex
	next    int
	procs   map[string]*localProc
	notices []Interruption
}

type localProc struct {
	inst Instance
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

var _ Provider = (*Local)(nil)

// Create implements Provider: it starts n agents.
func (l *Local) Create(_ context.Context, pool string, shape Shape, n int) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs == nil {
		l.procs = map[string]*localProc{}
	}
	bin := l.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local provider: find the drover binary: %w", err)
		}
		bin = exe
	}
	var ids []string
	for range n {
		l.next++
		id := fmt.Sprintf("local-%s-%d", pool, l.next)
		dir := filepath.Join(l.Dir, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return ids, fmt.Errorf("local provider: %w", err)
		}
		conf := filepath.Join(dir, "agent.hcl")
		if err := os.WriteFile(conf, []byte(localConfig(id, pool, shape, l.Servers)), 0o600); err != nil {
			return ids, fmt.Errorf("local provider: %w", err)
		}
		args := []string{"agent", "-client", "-config", conf, "-data-dir", filepath.Join(dir, "data"), "-node", id, "-http-port", "0"}
		if shape.GPUs > 0 {
			g := l.DevGPUs
			if g == "" {
				g = "dgxh100"
			}
			args = append(args, "-dev-gpus", g)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = l.Stdout, l.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return ids, fmt.Errorf("local provider: start agent %s: %w", id, err)
		}
		p := &localProc{inst: Instance{ID: id, Pool: pool, Spot: shape.Spot, Price: shape.Price, Created: time.Now()}, cmd: cmd, dir: dir,
			done: make(chan struct{})}
		go func() {
			_ = cmd.Wait()
			close(p.done)
		}()
		l.procs[id] = p
		ids = append(ids, id)
	}
	return ids, nil
}

// localConfig is an instance's agent config: the client block with its
// pool, servers and meta.
func localConfig(id, pool string, shape Shape, servers []string) string {
	var b strings.Builder
	if shape.Datacenter != "" {
		fmt.Fprintf(&b, "datacenter = %s\n", strconv.Quote(shape.Datacenter))
	}
	fmt.Fprintf(&b, "client {\n  enabled = true\n  node_pool = %s\n", strconv.Quote(pool))
	qs := make([]string, len(servers))
	for i, s := range servers {
		qs[i] = strconv.Quote(s)
	}
	fmt.Fprintf(&b, "  servers = [%s]\n  meta = {\n    %s = %s\n", strings.Join(qs, ", "), strconv.Quote(MetaInstance), strconv.Quote(id))
	if shape.Spot {
		fmt.Fprintf(&b, "    %s = \"true\"\n", strconv.Quote(MetaSpot))
	}
	b.WriteString("  }\n}\n")
	drivers := shape.Drivers
	if len(drivers) == 0 {
		drivers = []string{"raw_exec"} // Shape.Node's default drivers: exec needs no plugin block
	}
	for _, d := range drivers {
		if d == "raw_exec" {
			b.WriteString("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n")
		}
	}
	return b.String()
}

// Destroy implements Provider: SIGTERM, SIGKILL after StopTimeout, and
// the data dir goes.
func (l *Local) Destroy(_ context.Context, ids []string) error {
	l.mu.Lock()
	var procs []*localProc
	for _, id := range ids {
		if p, ok := l.procs[id]; ok {
			procs = append(procs, p)
			delete(l.procs, id)
		}
	}
	l.mu.Unlock()
	wait := l.StopTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	var errs []error
	for _, p := range procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		t := time.NewTimer(wait)
		select {
		case <-p.done:
		case <-t.C:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		t.Stop()
		if err := os.RemoveAll(p.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// List implements Provider: every agent started and not destroyed, those
// that exited on their own too (they hold their place against max until
// the scaler destroys them: their node is down, or never joined).
func (l *Local) List(context.Context) ([]Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Instance
	for _, p := range l.procs {
		out = append(out, p.inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Interruptions implements Provider: the notices queued with Interrupt.
func (l *Local) Interruptions(context.Context) ([]Interruption, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.notices
	l.notices = nil
	return out, nil
}

// Interrupt queues an interruption notice for an instance.
func (l *Local) Interrupt(id string, deadline time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notices = append(l.notices, Interruption{ID: id, Deadline: deadline})
}

// Close stops every agent.
func (l *Local) Close() error {
	l.mu.Lock()
	ids := make([]string, 0, len(l.procs))
	for id := range l.procs {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	return l.Destroy(context.Background(), ids)
}
