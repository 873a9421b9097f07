package gpusharetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// script is the stand-in; RECORD is replaced by the record file's path.
// A call is recorded after it ran (with the daemon's pid for -d) as one
// tab-separated line. A killed sleep may linger as a zombie (nothing
// reaps it): alive counts one as dead.
const script = `#!/bin/sh
rec='RECORD'
input=
if [ "$1" != "-d" ]; then read -r input; fi
pidfile="$CUDA_MPS_PIPE_DIRECTORY/daemon.pid"
alive() {
	[ -f "$pidfile" ] || return 1
	st=$(cut -d' ' -f3 "/proc/$(cat "$pidfile")/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}
record() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$*" "$input" "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$CUDA_VISIBLE_DEVICES" "$daemon" "$rc" >> "$rec"
}
daemon=0
rc=0
if [ "$1" = "-d" ]; then
	if alive; then
		rc=1; record "$@"
		echo "An instance of this daemon is already running" >&2
		exit 1
	fi
	sleep 1000000 </dev/null >/dev/null 2>&1 &
	daemon=$!
	echo "$daemon" > "$pidfile"
	record "$@"
	exit 0
fi
case "$input" in
quit*)
	if alive; then kill "$(cat "$pidfile")"; rm -f "$pidfile"; else rc=1; fi ;;
get_default_active_thread_percentage*)
	if alive; then echo 100.0; else rc=1; echo "Cannot find MPS control daemon process" >&2; fi ;;
*)
	rc=2 ;;
esac
record "$@"
exit $rc
`

// StandIn is an installed stand-in.
type StandIn struct {
	// Dir holds the script, named nvidia-cuda-mps-control.
	Dir    string
	record string
}

// New writes the stand-in into a temp dir; OnPath puts it on PATH. The
// daemons it started are killed when the test ends.
func New(t testing.TB) *StandIn {
	t.Helper()
	dir := t.TempDir()
	s := &StandIn{Dir: dir, record: filepath.Join(dir, "calls")}
	body := strings.ReplaceAll(script, "RECORD", s.record)
	if err := os.WriteFile(filepath.Join(dir, "nvidia-cuda-mps-control"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range s.Calls(t) {
			if c.Daemon > 0 && Alive(c.Daemon) {
				if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Daemon) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
					_ = syscall.Kill(c.Daemon, syscall.SIGKILL)
				}
			}
		}
	})
	return s
}

// OnPath puts the stand-in first on PATH for the rest of the test (and
// for the processes it starts).
func (s *StandIn) OnPath(t testing.TB) {
	t.Setenv("PATH", s.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Call is one recorded run of the stand-in.
type Call struct {
	Args    string // "-d" or ""
	Stdin   string // the command read ("quit", ...)
	PipeDir string // CUDA_MPS_PIPE_DIRECTORY
	LogDir  string // CUDA_MPS_LOG_DIRECTORY
	Visible string // CUDA_VISIBLE_DEVICES
	Daemon  int    // the daemon's pid (-d only)
	Status  int    // exit status
}

// Calls returns the recorded calls in order.
func (s *StandIn) Calls(t testing.TB) []Call {
	t.Helper()
	b, err := os.ReadFile(s.record)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []Call
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			continue
		}
		pid, _ := strconv.Atoi(f[5])
		rc, _ := strconv.Atoi(f[6])
		out = append(out, Call{Args: f[0], Stdin: f[1], PipeDir: f[2], LogDir: f[3], Visible: f[4], Daemon: pid, Status: rc})
	}
	return out
}

// Starts are the successful `-d` calls.
func (s *StandIn) Starts(t testing.TB) []Call {
	t.Helper()
	var out []Call
	for _, c := range s.Calls(t) {
		if c.Args == "-d" && c.Status == 0 {
			out = append(out, c)
		}
	}
	return out
}

// Quits are the successful "quit" calls.
func (s *StandIn) Quits(t testing.TB) []Call {
	t.Helper()
	var out []Call
	for _, c := range s.Calls(t) {
		if c.Stdin == "quit" && c.Status == 0 {
			out = append(out, c)
		}
	}
	return out
}

// Alive reports whether process pid runs (a zombie does not).
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
