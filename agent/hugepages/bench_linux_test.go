package hugepages

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchChildEnv makes the test binary a child that grows a heap, with the
// Advisor ("on") or without ("off"), prints what it cost and exits (see
// TestMain).
const benchChildEnv = "DROVER_BENCH_HUGEPAGES_CHILD"

// benchHeapBytes is the live heap the child builds: about a server's with
// 10,000 nodes and 100,000 allocs.
const benchHeapBytes = 1400 << 20

func TestMain(m *testing.M) {
	if mode := os.Getenv(benchChildEnv); mode != "" {
		growHeap(os.Stdout, mode == "on")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// record is the child's unit of long-lived state: pointers and strings
// the collector marks, as in a server's state store.
type record struct {
	id   uint64
	name string
	next *record
	tags []string
	_    [16]uint64 // the rest of a stored object
}

// benchCollections is how many full collections the child times once its
// heap is built.
const benchCollections = 5

// growHeap builds benchHeapBytes of records at a server's GC percent,
// with the Advisor when on, and writes "wall-µs cpu-µs minor-faults
// maxrss-KB anon-huge-KB collections" of the growth, then the mean wall
// time of benchCollections full collections of the built heap, in µs.
func growHeap(w io.Writer, on bool) {
	debug.SetGCPercent(200) // as agent/cli sets for a server
	if on {
		a := Start(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if a == nil {
			fmt.Fprintln(w, "advisor off")
			os.Exit(1)
		}
		defer a.Stop()
	}
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	const size = 248 // record + its name and tags, roughly
	recs := make([]*record, 0, benchHeapBytes/size)
	var prev *record
	for i := range benchHeapBytes / size {
		r := &record{id: uint64(i), name: "node-" + strconv.Itoa(i), next: prev, tags: []string{"a", strconv.Itoa(i & 1023)}}
		recs = append(recs, r)
		prev = r
	}
	wall := time.Since(t0)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	huge := anonHugeKB()
	// Then the collections of a server at rest: each marks the whole heap.
	t0 = time.Now()
	for range benchCollections {
		runtime.GC()
	}
	gc := time.Since(t0) / benchCollections
	fmt.Fprintln(w, wall.Microseconds(), cpu.Microseconds(), ru.Minflt-ru0.Minflt, ru.Maxrss, huge, ms.NumGC, gc.Microseconds())
	runtime.KeepAlive(recs)
}

// anonHugeKB is this process's AnonHugePages (smaps_rollup), in KB.
func anonHugeKB() int64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "AnonHugePages:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// BenchmarkHeapHugePages measures what the Advisor does for a growing
// heap: a child process builds benchHeapBytes of pointer-holding records
// at GC percent 200, as a server's state grows, once with the Advisor and
// once without (interleaved, b.N pairs). `make bench` prints, for each:
//
//	off-/on-grow-ms          wall time of the growth
//	off-/on-cpu-ms           the process's CPU time over it (mutator, collector, page faults)
//	off-/on-minor-faults-k   minor page faults over it, thousands
//	off-/on-peak-RSS-MB      peak resident memory
//	off-/on-huge-MB          anonymous huge pages at the end
//	off-/on-collections      garbage collections over the growth
//	off-/on-gc-ms            then one full collection of the built heap (mean of benchCollections)
//
// It is skipped where the Advisor would not start (THP not madvise, ...).
func BenchmarkHeapHugePages(b *testing.B) {
	if why := systemOffReason(); why != "" {
		b.Skipf("the Advisor is off here: %s", why)
	}
	const fields = 7
	units := [fields]string{"grow-ms", "cpu-ms", "minor-faults-k", "peak-RSS-MB", "huge-MB", "collections", "gc-ms"}
	scale := [fields]float64{1e-3, 1e-3, 1e-3, 1.0 / 1024, 1.0 / 1024, 1, 1e-3}
	sum := map[string]*[fields]float64{"off": {}, "on": {}}
	for i := 0; i < b.N; i++ {
		for _, mode := range []string{"off", "on"} {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), benchChildEnv+"="+mode)
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("child %s: %v: %s", mode, err, out)
			}
			f := strings.Fields(string(out))
			if len(f) != fields {
				b.Fatalf("child %s wrote %q", mode, out)
			}
			for j, s := range f {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					b.Fatalf("child %s wrote %q", mode, out)
				}
				sum[mode][j] += v * scale[j]
			}
		}
	}
	for _, mode := range []string{"off", "on"} {
		for j, u := range units {
			b.ReportMetric(sum[mode][j]/float64(b.N), mode+"-"+u)
		}
	}
}
