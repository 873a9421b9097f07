package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// supervisorsPerVariant is how many supervisors of each build run at once
// in BenchmarkSupervisorJSON: enough that the binary's shared pages are a
// small part of each one's Pss, as on a client running many tasks.
const supervisorsPerVariant = 20

// BenchmarkSupervisorJSON measures what the supervisor's own JSON codec
// (json.go, codec.go) saves against encoding/json (codec_stdjson.go):
// it builds drover-executor as `make build` does, once as it ships and
// once with -tags supervisor_stdjson, and runs supervisorsPerVariant
// supervisors of each, every one over a sleeping task, as the drivers
// start them. `make bench` prints:
//
//	own-binary-KB, stdjson-binary-KB    size of the stripped binary
//	own-PSS-KB, stdjson-PSS-KB          mean Pss per running supervisor (smaps_rollup)
//	own-private-KB, stdjson-private-KB  mean Private_Clean + Private_Dirty per supervisor
func BenchmarkSupervisorJSON(b *testing.B) {
	dir := b.TempDir()
	variants := []struct{ name, tags string }{{"own", ""}, {"stdjson", "supervisor_stdjson"}}
	bins := map[string]string{}
	for _, v := range variants {
		bins[v.name] = filepath.Join(dir, v.name, "drover-executor")
		args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", bins[v.name]}
		if v.tags != "" {
			args = append(args, "-tags", v.tags)
		}
		cmd := exec.Command("go", append(args, "github.com/drover/drover/drivers/executor/cmd/drover-executor")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", v.name, err, out)
		}
	}
	sum := map[string]float64{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range variants {
			pss, private := runSupervisors(b, bins[v.name], filepath.Join(dir, fmt.Sprintf("%s-%d", v.name, i)))
			sum[v.name+"-PSS-KB"] += pss
			sum[v.name+"-private-KB"] += private
		}
	}
	b.StopTimer()
	for _, v := range variants {
		st, err := os.Stat(bins[v.name])
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size())/1024, v.name+"-binary-KB")
		b.ReportMetric(sum[v.name+"-PSS-KB"]/float64(b.N), v.name+"-PSS-KB")
		b.ReportMetric(sum[v.name+"-private-KB"]/float64(b.N), v.name+"-private-KB")
	}
}

// runSupervisors starts supervisorsPerVariant supervisors of bin, each over
// `sleep`, waits for each one's start report, measures them all, then ends
// their tasks and waits for them. It returns the mean Pss and private
// memory of one supervisor, in KB.
func runSupervisors(b *testing.B, bin, dir string) (pss, private float64) {
	b.Helper()
	type running struct {
		cmd     *exec.Cmd
		taskPID int
	}
	var sups []running
	defer func() {
		for _, s := range sups {
			// The supervisor ends with its task (and records it).
			_ = syscall.Kill(s.taskPID, syscall.SIGKILL)
			if err := s.cmd.Wait(); err != nil {
				b.Errorf("supervisor %d: %v", s.cmd.Process.Pid, err)
			}
		}
	}()
	for j := range supervisorsPerVariant {
		d := filepath.Join(dir, strconv.Itoa(j))
		for _, sub := range []string{"logs", "state"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		cfg, err := json.Marshal(&Config{TaskName: "sleep", Command: "/bin/sleep", Args: []string{"3600"},
			LogDir: filepath.Join(d, "logs"), ExitFile: filepath.Join(d, "exit.json"), StateDir: filepath.Join(d, "state")})
		if err != nil {
			b.Fatal(err)
		}
		cfgPath := filepath.Join(d, "config.json")
		if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
			b.Fatal(err)
		}
		startR, startW, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, cfgPath)
		cmd.ExtraFiles = []*os.File{startW} // fd 3: the start pipe
		err = cmd.Start()
		startW.Close()
		if err != nil {
			startR.Close()
			b.Fatal(err)
		}
		line, err := bufio.NewReader(startR).ReadBytes('\n')
		startR.Close()
		var st Started
		if err == nil {
			err = json.Unmarshal(line, &st)
		}
		if err != nil || st.Err != "" || st.TaskPID == 0 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			b.Fatalf("supervisor start: %q %v", line, err)
		}
		sups = append(sups, running{cmd: cmd, taskPID: st.TaskPID})
	}
	for _, s := range sups {
		fields, err := smapsRollup(s.cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		pss += float64(fields["Pss"])
		private += float64(fields["Private_Clean"] + fields["Private_Dirty"])
	}
	n := float64(len(sups))
	return pss / n, private / n
}

// smapsRollup reads the "Key:  N kB" lines of /proc/pid/smaps_rollup.
func smapsRollup(pid int) (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}
