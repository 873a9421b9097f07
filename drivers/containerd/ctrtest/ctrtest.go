package ctrtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
)

// ErrUnavailable: containerd or runc is missing, or not running as root.
var ErrUnavailable = errors.New("containerd cannot run here")

// Daemon is a running private containerd.
type Daemon struct {
	Dir     string
	Address string // the grpc socket
	Log     string // the daemon's output
	cmd     *exec.Cmd
	exited  chan error
}

// disabled plugins: CRI and everything a driver test does not need, so the
// daemon starts in well under a second.
var disabledPlugins = []string{
	"io.containerd.grpc.v1.cri",
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.native",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
	"io.containerd.internal.v1.opt",
	"io.containerd.nri.v1.nri",
}

// Available reports why a daemon cannot start here (nil = it can).
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrUnavailable)
	}
	for _, b := range []string{"containerd", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%w: %s not on PATH (apt-get install containerd runc)", ErrUnavailable, b)
		}
	}
	return nil
}

// Start runs containerd in dir (created if needed; keep the path short: it
// holds the socket) and waits until it answers.
func Start(ctx context.Context, dir string) (*Daemon, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	d := &Daemon{Dir: dir, Address: filepath.Join(dir, "sock"), Log: filepath.Join(dir, "containerd.log"), exited: make(chan error, 1)}
	quoted := make([]string, len(disabledPlugins))
	for i, p := range disabledPlugins {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = [%s]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), strings.Join(quoted, ", "), d.Address, d.Address+".ttrpc")
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	logf, err := os.Create(d.Log)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	d.cmd = exec.Command("containerd", "--config", cfgPath)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Pdeathsig: a test process that dies (timeout panic, SIGKILL) takes
	// its daemon along instead of leaking it.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	go func() { d.exited <- d.cmd.Wait(); logf.Close() }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := d.ping(ctx); err == nil {
			return d, nil
		} else if time.Now().After(deadline) {
			d.Stop(context.Background())
			return nil, fmt.Errorf("start containerd: not ready after 30s: %w (log: %s)", err, tail(d.Log))
		}
		select {
		case err := <-d.exited:
			d.exited <- err
			return nil, fmt.Errorf("start containerd: exited: %v (log: %s)", err, tail(d.Log))
		case <-ctx.Done():
			d.Stop(context.Background())
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // poll interval
		}
	}
}

func (d *Daemon) ping(ctx context.Context) error {
	if _, err := os.Stat(d.Address); err != nil {
		return err
	}
	c, err := containerd.New(d.Address, containerd.WithTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Version(ctx)
	return err
}

// Stop kills every task the daemon still runs (in all namespaces), stops
// the daemon and waits for it.
func (d *Daemon) Stop(ctx context.Context) {
	if c, err := containerd.New(d.Address, containerd.WithTimeout(time.Second)); err == nil {
		if nss, err := c.NamespaceService().List(ctx); err == nil {
			for _, ns := range nss {
				nctx := namespaces.WithNamespace(ctx, ns)
				ctrs, _ := c.Containers(nctx)
				for _, ct := range ctrs {
					if t, err := ct.Task(nctx, nil); err == nil {
						_, _ = t.Delete(nctx, containerd.WithProcessKill)
					}
					_ = ct.Delete(nctx, containerd.WithSnapshotCleanup)
				}
			}
		}
		c.Close()
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
