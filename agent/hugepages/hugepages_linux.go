//go:build linux

package hugepages

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// MinGoal is the heap goal below which nothing is advised: a small
	// heap gains little and a huge page would round its resident size up.
	MinGoal = 64 << 20
	// chunk is the runtime's heap mapping step (pallocChunkBytes).
	chunk = 4 << 20
	// hugePage is the x86-64 and arm64 (4 KiB granule) THP size.
	hugePage = 2 << 20
)

// Advisor keeps the Go heap's growth advised for huge pages; see the
// package comment. It runs in the runtime's cleanup goroutine after each
// garbage collection; Stop ends it.
type Advisor struct {
	logger  *slog.Logger
	minGoal uint64
	limit   uint64 // largest ballast
	stopped atomic.Bool

	mu     sync.Mutex
	ranges []Range

	// raisedFrom is the GC percent to restore after the collection that
	// frees a deferred ballast; noRaise when none is pending. Guarded by
	// gcOff.
	raisedFrom int
}

// noRaise marks an Advisor with no raised GC percent pending.
const noRaise = math.MinInt

// Range is a heap address range advised MADV_HUGEPAGE, [Start, End).
type Range struct{ Start, End uintptr }

// active holds whether an Advisor runs: one per process, as two would
// each set and restore the GC percent and could leave the collector off.
var active atomic.Bool

// Start begins advising when the kernel, the runtime settings and the
// memory in the machine allow it (see the package comment), and returns
// nil (a no-op Advisor) when they do not or another Advisor runs.
func Start(logger *slog.Logger) *Advisor {
	if !active.CompareAndSwap(false, true) {
		return nil
	}
	why := systemOffReason()
	var si unix.Sysinfo_t
	if why == "" {
		if err := unix.Sysinfo(&si); err != nil {
			why = "sysinfo: " + err.Error()
		}
	}
	if why != "" {
		active.Store(false)
		logger.Debug("heap huge pages off", "reason", why)
		return nil
	}
	a := newAdvisor(logger, MinGoal, uint64(si.Totalram)*uint64(si.Unit)/2)
	a.arm()
	return a
}

func newAdvisor(logger *slog.Logger, minGoal, limit uint64) *Advisor {
	return &Advisor{logger: logger, minGoal: minGoal, limit: limit, raisedFrom: noRaise}
}

// systemOffReason is offReason for this process on this machine, or a
// 32-bit address space (too small for ballasts the size of the heap).
func systemOffReason() string {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return "32-bit address space"
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	overcommit, _ := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return offReason(string(mode), string(overcommit), os.Getenv("GODEBUG"), debug.SetMemoryLimit(-1))
}

// offReason says why advising would be wrong or useless here ("" when it
// is neither), from the kernel's THP mode, vm.overcommit_memory, $GODEBUG
// and the runtime's memory limit.
func offReason(mode, overcommit, godebug string, memLimit int64) string {
	switch {
	case !strings.Contains(mode, "[madvise]"):
		return "transparent_hugepage/enabled is not madvise: " + strings.TrimSpace(mode)
	case strings.TrimSpace(overcommit) == "2":
		return "strict overcommit (vm.overcommit_memory=2)"
	case godebugSet(godebug, "disablethp", "1"):
		return "GODEBUG=disablethp=1"
	case memLimit != math.MaxInt64:
		return "GOMEMLIMIT is set"
	}
	return ""
}

// godebugSet reports whether $GODEBUG's last setting of key is value.
func godebugSet(godebug, key, value string) bool {
	on := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == key {
			on = v == value
		}
	}
	return on
}

// Stop ends the advising; what is advised stays so. A pending GC hook
// sees it and does nothing; a new Advisor may start at once. Nil-safe.
func (a *Advisor) Stop() {
	if a != nil && !a.stopped.Swap(true) {
		a.restoreGCPercent()
		active.Store(false)
	}
}

// Ranges returns the heap ranges advised so far.
func (a *Advisor) Ranges() []Range {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Range(nil), a.ranges...)
}

// sentinel is the object whose collection marks the end of a GC cycle:
// pointer-free and over 16 bytes, so never in a shared tiny block.
type sentinel struct{ _ [32]byte }

// arm schedules afterGC for the next garbage collection.
func (a *Advisor) arm() {
	runtime.AddCleanup(new(sentinel), (*Advisor).afterGC, a)
}

func (a *Advisor) afterGC() {
	if a.stopped.Load() {
		return
	}
	a.restoreGCPercent() // this collection freed any deferred ballast
	goal, mapped := heapNow()
	if n := ballastSize(goal, mapped, a.minGoal, a.limit); n > 0 {
		// The heap's free room holds this cycle's growth: the ballast
		// can wait for the next collection (see grow).
		a.grow(n, mapped >= goal)
	}
	a.arm()
}

// heapClasses are the runtime/metrics memory classes that make up the
// mapped heap.
var heapClasses = []string{
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/heap/unused:bytes",
}

// heapNow is the heap goal and the heap's mapped size (the runtime's
// HeapSys, read without stopping the world).
func heapNow() (goal, mapped uint64) {
	return sumMetrics("/gc/heap/goal:bytes"), sumMetrics(heapClasses...)
}

// sumMetrics reads the named uint64 runtime metrics and adds them up
// (one not supported counts 0).
func sumMetrics(names ...string) uint64 {
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	metrics.Read(s)
	var sum uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			sum += s[i].Value.Uint64()
		}
	}
	return sum
}

// ballastSize is how much fresh heap to map and advise now: none while
// the goal is under minGoal or the heap maps at least twice the goal;
// otherwise enough to reach that and at least the heap's mapped size (so
// no free run of the heap can hold it: the runtime maps fresh memory for
// all of it but the free run at the top it may start in), in whole
// runtime chunks — or none when that exceeds limit.
func ballastSize(goal, mapped, minGoal, limit uint64) uint64 {
	// Twice the goal: after one ballast the mapped heap holds the next
	// cycle's growth (the goal at most doubles a cycle), so the next
	// ballasts can be deferred (see grow).
	want := 2 * goal
	if goal < minGoal || mapped >= want {
		return 0
	}
	n := max(mapped, want-mapped)
	n = (n + chunk - 1) &^ (chunk - 1)
	if n > limit {
		return 0
	}
	return n
}

// grow maps n bytes of fresh heap as a ballast, advises the huge pages
// inside it and drops it; the next collection frees it for the heap.
//
// A dropped ballast still counts in the heap until a collection frees
// it, and it is larger than the heap: left so, it would start a
// collection at once, a whole mark of the live heap for nothing (most of
// it in assists, as the heap looks far past its goal; the on-collections
// of BenchmarkHeapHugePages count the ones that cannot wait). When
// deferred is set (the heap's mapped free room holds the growth until the
// next goal), grow raises the GC percent so the goal moves up by the
// ballast's size: the next collection comes when it would have come
// anyway, frees the ballast, and afterGC restores the percent. Otherwise
// (the heap would have to grow past the ballast, into memory not
// advised) it is freed at once, as before.
//
// The collector is off while the ballast is allocated and referenced: a
// collection started by its allocation could find it on this goroutine's
// stack, count it live and double the next heap goal around it (the heap
// would then grow past the advised range for a whole cycle). That is a
// few microseconds; SetGCPercent(-1) also waits out a running mark. The
// advice comes after, by address: the memory stays mapped whatever the
// heap does with it meanwhile, and MADV_HUGEPAGE leaves contents alone.
func (a *Advisor) grow(n uint64, deferred bool) {
	gcOff.Lock()
	gogc := debug.SetGCPercent(-1)
	live := sumMetrics("/gc/heap/live:bytes")
	lo, hi := ballast(n)
	next := gogc
	if deferred && gogc > 0 && live > 0 {
		// The goal is live + (live + stacks + globals) * percent / 100:
		// rounding up on live alone moves it by at least n.
		next = gogc + int((n*100+live-1)/live)
		a.raisedFrom = gogc
	}
	debug.SetGCPercent(next)
	gcOff.Unlock()
	if lo >= hi {
		return
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE); errno != 0 {
		a.logger.Warn("heap huge pages: madvise failed; stopping", "mib", (hi-lo)>>20, "error", errno)
		a.stopped.Store(true) // and no other Advisor starts in this process (active stays set)
		return
	}
	a.mu.Lock()
	a.ranges = append(a.ranges, Range{lo, hi})
	a.mu.Unlock()
	a.logger.Debug("heap range advised for huge pages", "mib", (hi-lo)>>20)
}

// restoreGCPercent sets back the GC percent a deferred ballast raised.
func (a *Advisor) restoreGCPercent() {
	gcOff.Lock()
	defer gcOff.Unlock()
	if a.raisedFrom != noRaise {
		debug.SetGCPercent(a.raisedFrom)
		a.raisedFrom = noRaise
	}
}

// gcOff serializes the windows in which grow turns the collector off or
// raises its percent, and their restores, so that none restores the
// percent another one saved.
var gcOff sync.Mutex

// ballast allocates n bytes and returns the whole 2 MiB pages inside
// them; nothing refers to the bytes once it returns.
//
// They come from strings.Builder.Grow, which does not zero them:
// make([]byte, n) clears all of a span that starts in memory the heap used
// before (as a ballast does when the free run at the top of the heap is
// the start of its fit), touching every page of it in 4 KiB pages before
// the advice. One byte is written, to learn the address.
func ballast(n uint64) (lo, hi uintptr) {
	var sb strings.Builder
	sb.Grow(int(n))
	sb.WriteByte(0)
	start := uintptr(unsafe.Pointer(unsafe.StringData(sb.String())))
	return (start + hugePage - 1) &^ (hugePage - 1), (start + uintptr(n)) &^ (hugePage - 1)
}
