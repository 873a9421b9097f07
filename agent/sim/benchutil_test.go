package sim_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// benchServer is one `drover agent -server` process of a benchmark
// cluster: the real binary ($DROVER_TEST_BIN, else built once), real
// Raft on disk, so its RSS and CPU are the server's alone.
type benchServer struct {
	*testproc.Process
	name                         string
	base                         string
	httpPort, raftPort, gossPort int
	api                          *api.Client
}

// writeServerConfig is the HCL every benchmark server reads: the TTL
// floor and heartbeat grace, and no per-client connection limit (the
// load generators all share 127.0.0.1); maxHB > 0 sets
// max_heartbeats_per_second (TTLs then grow more slowly with the nodes).
func writeServerConfig(b testing.TB, dir string, minTTL, grace time.Duration, maxHB ...int) string {
	b.Helper()
	p := filepath.Join(dir, "server.hcl")
	extra := ""
	if len(maxHB) > 0 {
		extra = fmt.Sprintf("  max_heartbeats_per_second = %d\n", maxHB[0])
	}
	hcl := fmt.Sprintf("server {\n  min_heartbeat_ttl = %q\n  heartbeat_grace = %q\n%s}\nlimits {\n  http_max_conns_per_client = 0\n}\nenable_debug = true\n",
		minTTL.String(), grace.String(), extra)
	if err := os.WriteFile(p, []byte(hcl), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// startServers starts n servers (-bootstrap-expect n, all joining the
// first), with $DROVER_BENCH_SERVER_ENV added to their environment, and
// waits until they agree on a leader.
func startServers(b testing.TB, n int, configFile string) []*benchServer {
	b.Helper()
	var out []*benchServer
	var join string
	for i := range n {
		s := &benchServer{name: fmt.Sprintf("s%d", i+1), httpPort: testproc.FreePort(b), raftPort: testproc.FreePort(b),
			gossPort: testproc.FreePort(b)}
		args := []string{"agent", "-server", "-encrypt", "KYED7/CBebtGgPJzlH4od8NnEqi7sp1yHIgRgYtuAOo=", "-bootstrap-expect", strconv.Itoa(n), "-data-dir", b.TempDir(),
			"-bind", "127.0.0.1", "-node", s.name, "-http-port", strconv.Itoa(s.httpPort), "-raft-port", strconv.Itoa(s.raftPort),
			"-gossip-port", strconv.Itoa(s.gossPort), "-log-level", "warn"}
		if configFile != "" {
			args = append(args, "-config", configFile)
		}
		if join != "" {
			args = append(args, "-join", join)
		}
		// DROVER_BENCH_SERVER_ENV: extra environment of the server
		// processes alone ("GOGC=200 GOMEMLIMIT=16GiB"), not of the
		// simulator.
		s.Process = testproc.StartProcessEnv(b, strings.Fields(os.Getenv("DROVER_BENCH_SERVER_ENV")), args...)
		s.base = fmt.Sprintf("http://127.0.0.1:%d", s.httpPort)
		s.api = api.NewClient(s.base)
		if i == 0 {
			join = fmt.Sprintf("127.0.0.1:%d", s.gossPort)
		}
		out = append(out, s)
	}
	waitLeader(b, out, 60*time.Second)
	return out
}

// leaderOf is the leader the live servers agree on, or -1.
func leaderOf(servers []*benchServer) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	want := ""
	for _, s := range servers {
		if s.Exited() {
			continue
		}
		l, err := s.api.Leader(ctx)
		if err != nil || l == "" || (want != "" && l != want) {
			return -1
		}
		want = l
	}
	for i, s := range servers {
		if !s.Exited() && strings.HasSuffix(want, ":"+strconv.Itoa(s.raftPort)) {
			return i
		}
	}
	return -1
}

// waitLeader polls the server processes (no signal crosses the process
// boundary) until they agree on a leader, and returns its index.
func waitLeader(b testing.TB, servers []*benchServer, d time.Duration) int {
	b.Helper()
	l := -1
	testproc.Eventually(b, d, "servers agreeing on a leader", func() bool {
		l = leaderOf(servers)
		return l >= 0
	})
	return l
}

// raftIndex is one of a server's Raft stats ("last_log_index",
// "applied_index").
func raftIndex(s *benchServer, key string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	self, err := s.api.AgentSelf(ctx)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(self.Stats["raft"][key], 10, 64)
}

// waitCaughtUp waits until server i has applied what the leader had
// logged when the wait began (a restarted server restores its snapshot
// and replays the log first).
func waitCaughtUp(b testing.TB, servers []*benchServer, i, leader int, d time.Duration) {
	b.Helper()
	var target uint64
	var err error
	defer func() {
		if b.Failed() {
			b.Logf("%s: target index %d, last error %v", servers[i].name, target, err)
		}
	}()
	testproc.Eventually(b, d, servers[i].name+" caught up with the leader", func() bool {
		if target == 0 {
			if target, err = raftIndex(servers[leader], "last_log_index"); err != nil {
				return false
			}
		}
		var applied uint64
		applied, err = raftIndex(servers[i], "applied_index")
		return err == nil && applied >= target
	})
}

func addrs(servers []*benchServer) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.base)
	}
	return out
}

// rssMB is the process's VmRSS in MiB.
func rssMB(b testing.TB, pid int) float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds(b testing.TB, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the ")" of the command name: utime is the 12th, stime the 13th.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// heapMB is the server's live Go heap as of its last GC, in MiB: the
// heap goal it exports (go_memstats_next_gc_bytes) over 1 + GOGC/100.
// (heap_inuse would count the garbage not yet collected too.) -1 when
// not exported.
func heapMB(s *benchServer) float64 {
	r, err := http.Get(s.base + "/v1/metrics")
	if err != nil {
		return -1
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	goal, gogc := -1.0, 100.0
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_next_gc_bytes "); ok {
			goal, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "go_gc_gogc_percent "); ok {
			if g, err := strconv.ParseFloat(v, 64); err == nil && g > 0 {
				gogc = g
			}
		}
	}
	if goal < 0 {
		return -1
	}
	return goal / (1 + gogc/100) / (1 << 20)
}

// benchJob is a service job of count allocs of a mock task sized so
// about 100 fit a simulated node (1,600 MHz of 166,400, 4 GB of 512).
func benchJob(id string, count int) *api.Job {
	return &api.Job{ID: id, Name: id, Type: api.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: count,
			Tasks: []*api.Task{{Name: "t", Driver: "mock", Resources: &api.Resources{CPU: 1600, MemoryMB: 4000}}}}}}
}

// running sums the jobs' running allocs from their summaries, and the
// placed ones (starting or running), read in one job list (it carries
// each job's summary) rather than a summary request per job: 100
// requests a poll in C1M, the benchmark's own load on the server (one
// interleaved pair: 111 -> 108 ms of server CPU per 1,000 allocs).
func running(ctx context.Context, c *api.Client, jobs []string) (run, placed int, err error) {
	list, _, err := c.Jobs(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	want := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		want[j] = true
	}
	seen := 0
	for _, j := range list {
		if !want[j.ID] {
			continue
		}
		seen++
		if j.JobSummary == nil {
			return 0, 0, fmt.Errorf("job %s listed without its summary", j.ID)
		}
		for _, g := range j.JobSummary.Summary {
			run += g.Running
			placed += g.Running + g.Starting
		}
	}
	if seen != len(want) {
		return 0, 0, fmt.Errorf("%d of the %d jobs listed", seen, len(want))
	}
	return run, placed, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// envInt is the integer in $name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// profileLeader, when $DROVER_BENCH_PPROF names a file, records the
// server's CPU profile (its /debug/pprof) for the next
// $DROVER_BENCH_PPROF_SECONDS (default 15) into that file, and its
// allocation profile now and when the returned wait is called (FILE.allocs0
// and FILE.allocs1: `go tool pprof -base` shows what was allocated in
// between), and this process's (the simulator's) CPU profile over the
// same window into FILE.sim, for finding what a run spends its time on. The returned wait
// blocks until the profiles are written; calling it again returns at once.
func profileLeader(b testing.TB, s *benchServer) (wait func()) {
	b.Helper()
	out := os.Getenv("DROVER_BENCH_PPROF")
	if out == "" {
		return func() {}
	}
	save := func(path, file string) {
		resp, err := http.Get(s.base + path)
		if err != nil {
			b.Errorf("profile: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(file)
		if err != nil {
			b.Errorf("profile: %v", err)
			return
		}
		defer f.Close()
		if _, err := io.Copy(f, resp.Body); err != nil {
			b.Errorf("profile: %v", err)
		}
	}
	save("/debug/pprof/allocs", out+".allocs0")
	secs := envInt("DROVER_BENCH_PPROF_SECONDS", 15)
	done := make(chan struct{})
	go func() {
		defer close(done)
		save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), out)
	}()
	// This process's (the simulator's) CPU profile over the same window.
	simOut, err := os.Create(out + ".sim")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(simOut); err != nil {
		b.Fatal(err)
	}
	simTimer := time.AfterFunc(time.Duration(secs)*time.Second, pprof.StopCPUProfile)
	var once sync.Once
	return func() {
		once.Do(func() {
			save("/debug/pprof/allocs", out+".allocs1")
			<-done
			simTimer.Stop()
			pprof.StopCPUProfile()
			simOut.Close()
		})
	}
}
