package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// The benchmarks in this file drive the real built binary ($DROVER_TEST_BIN,
// else one built here with the Makefile's flags) as a user would run it:
// `drover agent -dev -data-dir D -http-port P`. `make bench` prints their
// metrics against the project's targets:
//
//	BenchmarkDevAgentStart    start-ms        process start -> health ok and the node ready (<= 500)
//	BenchmarkDevAgentIdleRSS  idle-RSS-MB     agent VmRSS after 5 s idle (<= 30)
//	BenchmarkRawExec100       run100-s        submit -> 100 raw_exec allocs running (<= 3.5)
//	                          helpers-RSS-MB  sum of the 100 executors' VmRSS (<= 300)
//	                          helpers-PSS-MB  sum of their Pss (smaps_rollup)

func benchNeedRoot(b *testing.B) {
	b.Helper()
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			b.Fatal("the dev agent's client role needs root (CI=true)")
		}
		b.Skip("the dev agent's client role needs root")
	}
}

// devAgent is one `drover agent -dev` process.
type devAgent struct {
	*testproc.Process
	base string
	api  *api.Client
}

// startDevAgent starts the binary; it does not wait for anything.
func startDevAgent(b *testing.B) *devAgent {
	b.Helper()
	httpPort := testproc.FreePort(b)
	p := testproc.StartProcess(b, "agent", "-dev", "-data-dir", b.TempDir(),
		"-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(testproc.FreePort(b)),
		"-gossip-port", strconv.Itoa(testproc.FreePort(b)), "-log-level", "warn")
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	return &devAgent{Process: p, base: base, api: api.NewClient(base)}
}

// waitReady polls (a 2 ms tick, 30 s deadline) until /v1/agent/health
// answers 200 with both roles ok, then follows /v1/nodes with blocking
// queries until the agent's own node is ready.
func (a *devAgent) waitReady(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		if time.Now().After(deadline) {
			b.Fatal("agent not healthy within 30s")
		}
		var h api.AgentHealth
		if r, err := hc.Get(a.base + "/v1/agent/health"); err == nil {
			ok := r.StatusCode == http.StatusOK && decodeJSON(r, &h) == nil &&
				h.Server != nil && h.Server.Ok && h.Client != nil && h.Client.Ok
			r.Body.Close()
			if ok {
				break
			}
		}
		select {
		case <-a.Done():
			b.Fatalf("agent exited before it was healthy: %v", a.Err())
		case <-tick.C:
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var idx uint64
	for {
		nodes, m, err := a.api.Nodes(ctx, &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Second})
		if err != nil {
			b.Fatalf("list nodes: %v", err)
		}
		if len(nodes) == 1 && nodes[0].Status == api.NodeStatusReady {
			return
		}
		if len(nodes) > 1 {
			b.Fatalf("dev agent lists %d nodes, want 1", len(nodes))
		}
		idx = m.LastIndex
	}
}

// stop sends SIGTERM and waits up to 60 s for a clean exit.
func (a *devAgent) stop(b *testing.B) {
	b.Helper()
	if err := a.Stop(b, 60*time.Second); err != nil {
		b.Errorf("agent exited with %v after SIGTERM, want 0", err)
	}
}

func decodeJSON(r *http.Response, v any) error {
	return json.NewDecoder(r.Body).Decode(v)
}

// BenchmarkDevAgentStart: process start -> /v1/agent/health ok and the
// local node ready in /v1/nodes (target <= 100 ms).
func BenchmarkDevAgentStart(b *testing.B) {
	benchNeedRoot(b)
	testproc.Binary(b) // build outside the timer
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		a := startDevAgent(b)
		a.waitReady(b)
		total += time.Since(t0)
		b.StopTimer()
		a.stop(b)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "start-ms")
}

// BenchmarkDevAgentIdleRSS: the dev agent's VmRSS once it has been idle
// (ready, no jobs) for 5 s, sampled every 250 ms (target <= 30 MB).
func BenchmarkDevAgentIdleRSS(b *testing.B) {
	benchNeedRoot(b)
	testproc.Binary(b) // build outside the timer
	var idle, peak float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := startDevAgent(b)
		a.waitReady(b)
		pid := a.Pid()
		end := time.Now().Add(5 * time.Second)
		tick := time.NewTicker(250 * time.Millisecond)
		var last float64
		for time.Now().Before(end) {
			<-tick.C
			kb, err := procStatusKB(pid, "VmRSS")
			if err != nil {
				b.Fatalf("agent RSS: %v", err)
			}
			last = float64(kb) / 1024
			peak = max(peak, last)
		}
		tick.Stop()
		idle += last
		b.StopTimer()
		a.stop(b)
		b.StartTimer()
	}
	b.ReportMetric(idle/float64(b.N), "idle-RSS-MB")
	b.ReportMetric(peak, "peak-RSS-MB")
}

const rawExec100Job = `{"Job":{"ID":"bench100","Type":"service","TaskGroups":[{"Name":"sleepers","Count":100,
"Tasks":[{"Name":"sleep","Driver":"raw_exec","Config":{"command":"/bin/sleep","args":["3600"]},
"Resources":{"CPU":20,"MemoryMB":10}}]}]}}`

// BenchmarkRawExec100: one job with a group of count = 100 raw_exec
// `sleep 3600` tasks; submit -> all 100 allocations running, followed with
// blocking queries on /v1/job/bench100/allocations (target <= 3.5 s).
// Then the memory of the 100 task supervisors (drover-executor, children of
// the agent): total VmRSS and total Pss (target <= 300 MB).
func BenchmarkRawExec100(b *testing.B) {
	benchNeedRoot(b)
	testproc.Binary(b) // build outside the timer
	var total time.Duration
	var rss, pss float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		a := startDevAgent(b)
		a.waitReady(b)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		b.StartTimer()

		t0 := time.Now()
		r, err := http.NewRequestWithContext(ctx, "PUT", a.base+"/v1/jobs", strings.NewReader(rawExec100Job))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			b.Fatalf("register: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("register: status %d", resp.StatusCode)
		}
		var idx uint64
		for {
			stubs, m, err := a.api.JobAllocations(ctx, "bench100", &api.QueryOptions{WaitIndex: idx, WaitTime: 10 * time.Second})
			if err != nil {
				b.Fatalf("job allocations (after %v): %v", time.Since(t0), err)
			}
			running, failed := 0, 0
			for _, s := range stubs {
				switch s.ClientStatus {
				case api.AllocClientStatusRunning:
					running++
				case api.AllocClientStatusFailed:
					failed++
				}
			}
			if failed > 0 {
				b.Fatalf("%d allocations failed", failed)
			}
			if running == 100 {
				break
			}
			if running > 100 {
				b.Fatalf("%d allocations running, want 100", running)
			}
			idx = m.LastIndex
		}
		total += time.Since(t0)
		b.StopTimer()
		cancel()

		helpers, err := executorChildren(a.Pid())
		if err != nil {
			b.Fatal(err)
		}
		if len(helpers) != 100 {
			b.Errorf("found %d supervisor (drover-executor) children of the agent, want 100", len(helpers))
		}
		var sumRSS, sumPSS int64
		for _, pid := range helpers {
			r, err := procStatusKB(pid, "VmRSS")
			if err != nil {
				b.Fatalf("executor %d RSS: %v", pid, err)
			}
			p, err := smapsRollupKB(pid, "Pss")
			if err != nil {
				b.Fatalf("executor %d PSS: %v", pid, err)
			}
			sumRSS += r
			sumPSS += p
		}
		rss += float64(sumRSS) / 1024
		pss += float64(sumPSS) / 1024

		// Stopping the job stops its tasks: the supervisors must go. (With
		// -data-dir, a stopping agent leaves its tasks running to reattach.)
		if _, err := a.api.DeregisterJob(context.Background(), "bench100", true, nil); err != nil {
			b.Errorf("stop job: %v", err)
		}
		left := waitGone(helpers, 30*time.Second)
		a.stop(b)
		if len(left) > 0 {
			b.Errorf("%d executors still alive 30s after their job was stopped", len(left))
			for _, pid := range left {
				_ = syscall.Kill(-pid, syscall.SIGKILL) // own session: kill its group
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "run100-s")
	b.ReportMetric(rss/float64(b.N), "helpers-RSS-MB")
	b.ReportMetric(pss/float64(b.N), "helpers-PSS-MB")
}

// executorChildren lists the task supervisors whose parent is pid:
// drover-executor processes, or `drover executor` where that is absent.
func executorChildren(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, split after ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) == "drover-executor" || len(args) >= 2 && args[1] == "executor" {
			out = append(out, child)
		}
	}
	return out, nil
}

// waitGone polls until none of pids exists (or the timeout) and returns
// the ones left.
// waitGone waits until every process of pids has exited (or timeout
// passes) and returns those still running. It waits on each process's
// pidfd, which becomes readable when the process exits (zombies count as
// gone), not by polling.
func waitGone(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	var left []int
	for _, p := range pids {
		fd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			continue // gone already (ESRCH)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			ms := int(time.Until(deadline).Milliseconds())
			n, err := unix.Poll(fds, max(ms, 0))
			if err == unix.EINTR {
				continue
			}
			if n == 0 && err == nil {
				left = append(left, p)
			}
			break
		}
		unix.Close(fd)
	}
	return left
}

func procState(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) == 0 {
		return "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	return f[0], nil
}

// procStatusKB reads a "Key:  N kB" line of /proc/pid/status.
func procStatusKB(pid int, key string) (int64, error) {
	return kbField(fmt.Sprintf("/proc/%d/status", pid), key)
}

// smapsRollupKB reads a "Key:  N kB" line of /proc/pid/smaps_rollup.
func smapsRollupKB(pid int, key string) (int64, error) {
	return kbField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), key)
}

func kbField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		return strconv.ParseInt(v, 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}
