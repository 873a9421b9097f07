//go:build linux

package hugepages

import (
	"bufio"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/drover/drover/internal/testproc"
)

func TestOffReason(t *testing.T) {
	const madvise = "always [madvise] never\n"
	for _, tc := range []struct {
		name, mode, overcommit, godebug string
		limit                           int64
		off                             bool
	}{
		{"madvise", madvise, "0\n", "", math.MaxInt64, false},
		{"heuristic overcommit off", madvise, "1", "madvdontneed=1", math.MaxInt64, false},
		{"always", "[always] madvise never", "0", "", math.MaxInt64, true},
		{"never", "always madvise [never]", "0", "", math.MaxInt64, true},
		{"no THP in the kernel", "", "0", "", math.MaxInt64, true},
		{"strict overcommit", madvise, "2\n", "", math.MaxInt64, true},
		{"disablethp", madvise, "0", "gctrace=1,disablethp=1", math.MaxInt64, true},
		{"disablethp set back", madvise, "0", "disablethp=1,disablethp=0", math.MaxInt64, false},
		{"GOMEMLIMIT", madvise, "0", "", 4 << 30, true},
	} {
		got := offReason(tc.mode, tc.overcommit, tc.godebug, tc.limit)
		if (got != "") != tc.off {
			t.Errorf("%s: offReason = %q, want off=%v", tc.name, got, tc.off)
		}
	}
}

func TestBallastSize(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                       string
		goal, mapped, minGoal, lim uint64
		want                       uint64
	}{
		{"small heap", 32 * mib, 8 * mib, 64 * mib, 1 << 40, 0},
		{"room enough", 100 * mib, 200 * mib, 64 * mib, 1 << 40, 0},
		{"doubles the heap", 100 * mib, 120 * mib, 64 * mib, 1 << 40, 120 * mib},
		{"reaches 2x goal", 400 * mib, 100 * mib, 64 * mib, 1 << 40, 700 * mib},
		{"whole chunks", 100 * mib, 121 * mib, 64 * mib, 1 << 40, 124 * mib},
		{"over the limit", 100 * mib, 120 * mib, 64 * mib, 100 * mib, 0},
	} {
		if got := ballastSize(tc.goal, tc.mapped, tc.minGoal, tc.lim); got != tc.want {
			t.Errorf("%s: ballastSize = %d MiB, want %d MiB", tc.name, got/mib, tc.want/mib)
		}
	}
}

// TestGrowAdvisesFreshHeap: after a ballast is advised and collected, a
// large allocation that only the freed ballast can hold lands in memory
// the kernel sees advised (VmFlags "hg").
func TestGrowAdvisesFreshHeap(t *testing.T) {
	runtime.GC()
	_, mapped := heapNow()
	free := sumMetrics("/memory/classes/heap/free:bytes", "/memory/classes/heap/released:bytes")
	n := (mapped + 2*chunk) &^ (chunk - 1)
	a := newAdvisor(slog.New(slog.NewTextHandler(io.Discard, nil)), 0, 1<<40)
	a.grow(n, false)
	r := a.Ranges()
	if len(r) != 1 || r[0].End-r[0].Start < uintptr(n)-2*hugePage {
		t.Fatalf("advised %+v, want one range of about %d bytes", r, n)
	}
	if !vmaAdvised(t, r[0].Start) {
		t.Fatalf("ballast range %#x not advised in smaps", r[0].Start)
	}
	runtime.GC()                  // frees the ballast
	x := make([]byte, free+chunk) // more than any free run outside the ballast

	mid := uintptr(unsafe.Pointer(&x[len(x)/2]))
	if mid < r[0].Start || mid >= r[0].End {
		t.Errorf("allocation of %d bytes at %#x, outside the freed ballast %#x-%#x", len(x), mid, r[0].Start, r[0].End)
	}
	if !vmaAdvised(t, mid) {
		t.Errorf("heap page %#x not advised after the ballast", mid)
	}
	runtime.KeepAlive(x)
}

// TestDeferredBallastStartsNoCollection: a deferred ballast, larger than
// the heap, starts no collection of its own: the GC percent rises by its
// share of the live heap until the next collection (which frees it), and
// then comes back.
func TestDeferredBallastStartsNoCollection(t *testing.T) {
	runtime.GC()
	_, mapped := heapNow()
	n := (mapped + 2*chunk) &^ (chunk - 1)
	gogc := gcPercent()
	a := newAdvisor(slog.New(slog.NewTextHandler(io.Discard, nil)), 0, 1<<40)
	goal, _ := heapNow()
	a.grow(n, true)
	// The ballast counts in the heap until collected: the goal must move
	// past it, or the next allocation starts a collection.
	if raised, _ := heapNow(); raised < goal+n {
		t.Errorf("heap goal %d MiB -> %d MiB (GC percent %d -> %d) with a deferred ballast of %d MiB: a collection starts at once",
			goal>>20, raised>>20, gogc, gcPercent(), n>>20)
	}
	runtime.GC() // frees the ballast
	a.restoreGCPercent()
	if got := gcPercent(); got != gogc {
		t.Errorf("GC percent after the restore: %d, want %d", got, gogc)
	}
	if len(a.Ranges()) != 1 {
		t.Errorf("advised %+v, want one range", a.Ranges())
	}
	// Stop restores a raise still pending.
	a.grow(n, true)
	a.Stop()
	if got := gcPercent(); got != gogc {
		t.Errorf("GC percent after Stop: %d, want %d", got, gogc)
	}
}

// gcPercent is the runtime's GC percent (GOGC).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestAdvisorFollowsGC: once live data pushes the heap goal past half of
// the mapped heap, the GC hook advises fresh heap.
func TestAdvisorFollowsGC(t *testing.T) {
	runtime.GC()
	_, mapped := heapNow()
	live := make([]byte, mapped)
	defer runtime.KeepAlive(live)
	a := newAdvisor(slog.New(slog.NewTextHandler(io.Discard, nil)), 0, 1<<40)
	a.arm()
	defer a.Stop()
	testproc.Eventually(t, 10*time.Second, "a heap range advised after collections", func() bool {
		if len(a.Ranges()) != 0 {
			return true
		}
		runtime.GC()
		return false
	})
	if r := a.Ranges()[0]; !vmaAdvised(t, r.Start) {
		t.Errorf("range %+v not advised in smaps", r)
	}
}

// TestOneAdvisorAtATime: a second Start while one runs gets none; after
// Stop one may start again.
func TestOneAdvisorAtATime(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := Start(l)
	if a == nil {
		if systemOffReason() == "" {
			t.Fatal("Start = nil on a machine that allows advising")
		}
		return
	}
	if b := Start(l); b != nil {
		b.Stop()
		t.Fatal("a second Advisor started while one runs")
	}
	a.Stop()
	b := Start(l)
	if b == nil {
		t.Fatal("no Advisor after the first stopped")
	}
	b.Stop()
}

// vmaAdvised reports whether the mapping holding addr carries VM_HUGEPAGE
// ("hg" in /proc/self/smaps VmFlags).
func vmaAdvised(t *testing.T, addr uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := vmaBounds(line); ok {
			in = addr >= lo && addr < hi
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Contains(" "+flags+" ", " hg ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}

// vmaBounds parses the "lo-hi perms ..." header line of an smaps entry.
func vmaBounds(line string) (lo, hi uintptr, ok bool) {
	rng, _, found := strings.Cut(line, " ")
	a, b, dash := strings.Cut(rng, "-")
	if !found || !dash {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
