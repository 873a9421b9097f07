package testproc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary struct {
	once sync.Once
	path string
	err  error
}

// Binary returns $DROVER_TEST_BIN, or a drover binary built once per test
// process (as `make build` builds it) into a temp dir that is left for the
// OS to clean (use MainWithBinary to remove it). A build failure fails
// the test.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() { binary.path, _, binary.err = DroverBinary() })
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// DroverBinary returns $DROVER_TEST_BIN, or builds github.com/drover/drover
// and drover-executor into a new temp dir (call it once, from TestMain);
// cleanup removes it.
// Binary is the same for tests without a TestMain.
func DroverBinary() (path string, cleanup func(), err error) {
	if p := os.Getenv("DROVER_TEST_BIN"); p != "" {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "drover-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "drover")
	var out []byte
	// As `make build` builds bin/drover and, next to it, the small task
	// supervisor bin/drover-executor (which the drivers prefer), so
	// benchmarks measure them.
	for _, b := range [][2]string{{path, "github.com/drover/drover"},
		{filepath.Join(dir, "drover-executor"), "github.com/drover/drover/drivers/executor/cmd/drover-executor"}} {
		for try := 0; try < 2; try++ { // concurrent builds of several test packages can trip once
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", b[0], b[1])
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err = cmd.CombinedOutput(); err == nil {
				break
			}
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("build %s: %v: %s", b[1], err, out)
		}
	}
	// The exec driver's tasks (user nobody) never need to read it, but
	// the supervisor runs it as root from here.
	_ = os.Chmod(dir, 0o755)
	return path, func() { os.RemoveAll(dir) }, nil
}

// MainWithBinary is a TestMain for packages whose tests run the drover
// binaries: it sets *bin (see DroverBinary), runs the tests, removes what
// it built and exits with the tests' code.
func MainWithBinary(m *testing.M, bin *string) {
	path, cleanup, err := DroverBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Ports handed out by FreePort: below both the kernel's ephemeral range
// (Linux: 32768–60999) and the dynamic ports the scheduler gives tasks
// (20000–32000), so that no port 0 bind, outgoing connection or task of
// another test can take one between FreePort and its use; and never twice
// in one test process.
const freePortLow, freePortHigh = 10000, 20000

var freePorts struct {
	sync.Mutex
	given map[int]bool
}

// FreePort returns a port that is free on 127.0.0.1 for TCP and UDP alike
// (gossip uses both), for a process a test starts with that port on its
// command line. In-process agents should bind port 0 instead.
func FreePort(t testing.TB) int {
	t.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	if freePorts.given == nil {
		freePorts.given = map[int]bool{}
	}
	for range 1000 {
		p := freePortLow + rand.IntN(freePortHigh-freePortLow)
		if freePorts.given[p] || !portFree(p) {
			continue
		}
		freePorts.given[p] = true
		return p
	}
	t.Fatal("FreePort: no free port found in 1000 tries")
	return 0
}

func portFree(p int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	return pc.Close() == nil
}

// Process is a running drover process (`drover agent ...` and the like)
// with its combined output kept. Its cleanup, registered by StartProcess,
// ends it if still running (SIGTERM, so a dev agent stops its tasks; SIGKILL
// after 30 s) and logs the output when the test failed.
type Process struct {
	Args []string
	Env  []string // added to the environment (nil: the test's environment)

	bin  string
	name string // what() names it by ("": drover and its subcommand)
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, set before done closes
	out  *syncBuf
}

// StartProcess runs Binary(t) with args (it does not wait for anything).
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, nil, args...)
}

// StartProcessEnv is StartProcess with extra environment variables.
func StartProcessEnv(t testing.TB, env []string, args ...string) *Process {
	t.Helper()
	return startBinary(t, &Process{Args: args, Env: env, bin: Binary(t), out: &syncBuf{}})
}

// startBinary starts p and registers its cleanup.
func startBinary(t testing.TB, p *Process) *Process {
	t.Helper()
	p.start(t)
	t.Cleanup(func() {
		var tasks []Proc
		if !p.Exited() {
			tasks = Descendants(p.Pid())
		}
		p.terminate(30 * time.Second)
		// An agent's tasks outlive it (reap.go): those it started, and
		// any a killed earlier run of it left under its data dir.
		if killed := Reap(tasks, ArgValue(p.Args, "data-dir")); len(killed) > 0 {
			t.Logf("%s left %d processes running; killed: %s", p.what(), len(killed), strings.Join(killed, "; "))
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.what(), p.Output())
		}
	})
	return p
}

// ArgValue is the value of flag name in args ("-name v", "--name=v" ...),
// or "".
func ArgValue(args []string, name string) string {
	for i, a := range args {
		f := strings.TrimLeft(a, "-")
		if f == a {
			continue // not a flag
		}
		if k, v, ok := strings.Cut(f, "="); ok && k == name {
			return v
		}
		if f == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func (p *Process) what() string {
	if p.name != "" {
		return p.name
	}
	if len(p.Args) > 0 {
		return "drover " + p.Args[0]
	}
	return "drover"
}

func (p *Process) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(p.bin, p.Args...)
	if p.Env != nil {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.what(), err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		p.err = err
		close(done)
	}()
}

// Restart starts the process again with the same arguments once it has
// exited (Stop or Kill it first).
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
	default:
		t.Fatalf("restart %s: it is still running", p.what())
	}
	p.start(t)
}

// Pid of the process.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for exit 0); valid once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is everything the process wrote so far (stdout and stderr).
func (p *Process) Output() string { return p.out.String() }

// Stop sends SIGTERM and waits up to timeout for the exit; it returns
// the exit error (nil for a clean exit) and fails the test when the
// process does not exit in time (then it is killed).
func (p *Process) Stop(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if p.Exited() {
		return p.err
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.Exited() {
		t.Fatalf("SIGTERM %s: %v", p.what(), err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		t.Fatalf("%s did not exit within %s of SIGTERM", p.what(), timeout)
		return nil
	}
}

// terminate sends SIGTERM, then SIGKILL after grace, and waits.
func (p *Process) terminate(grace time.Duration) {
	if p.cmd == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill sends SIGKILL (if still running) and waits for the exit.
func (p *Process) Kill() {
	if p.cmd == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// WaitFor is Eventually that also fails the test when the process exits
// before cond holds.
func (p *Process) WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := poll(timeout, cond, p.done); err != nil {
		if p.Exited() {
			t.Fatalf("%s: %s exited first: %v", what, p.what(), p.err)
		}
		t.Fatalf("%s: %v", what, err)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
