// Package hugepages backs the growth of a long-running process's Go heap
// with transparent huge pages (THP) where the kernel offers them only on
// request (/sys/kernel/mm/transparent_hugepage/enabled is "madvise", the
// default of most distributions).
//
// Off by default: `drover agent` and `drover sim` start it only with
// DROVER_HEAP_HUGEPAGES=1 (StartFromEnv), because it no longer pays.
// It was added for the first-touch page faults of a growing server heap
// (every 4 KiB page of gigabytes of state costs one). The Go runtime no
// longer asks for huge pages itself (it did briefly in Go 1.21), and it
// maps its heap in 4 MiB steps that each start a new mapping, so advising
// the heap once is not enough. BenchmarkHeapHugePages (`make bench`: a
// child process grows a 1.4 GB heap of pointer-holding records at GC
// percent 200, with and without the Advisor) shows it does what it was
// meant to and still costs more than it saves: on the 2-core development
// VM on 2026-12-07 (3 interleaved pairs) the minor faults fell from
// 417,000 to 55,000 and a full collection of the grown heap took 559
// instead of 681 ms, but the growth took 4.8 instead of 2.2 s of CPU (the
// kernel's time in huge-page faults, and ballasts that cannot wait start
// collections of their own: 7 instead of 4). In the whole-path benchmark
// it was added for (BenchmarkPlacements10x10000, 5 interleaved pairs with
// GODEBUG=disablethp=1 as the off switch) the server's CPU per 1,000
// allocs was the same within the noise, 110.5 against 109.7 ms
// (docs/perf-log.md).
//
// How: after each garbage collection (a runtime.AddCleanup hook, no
// goroutine or timer of its own), once the heap goal passes MinGoal the
// Advisor keeps the heap's mapped size at least twice the goal. It
// allocates a "ballast" at least as large as the heap, which no free run
// of the heap can hold, so the runtime maps fresh memory for it; it
// advises the ballast's range MADV_HUGEPAGE and drops it. The next
// collection frees the ballast and the heap grows into the advised range.
// That collection comes when it would have come anyway: the GC percent is
// raised by the ballast's share of the live heap until then, so the dead
// ballast does not start one of its own (a whole mark, for nothing). Only
// when the heap's free room could not hold the growth until then (the
// first ballast, usually) is the ballast collected at once.
// The ballast is never zeroed or touched (strings.Builder.Grow), so it
// costs address space and a little runtime metadata, not resident memory;
// the runtime counts the freed range as free heap until its scavenger
// releases it. The collector is off for the microseconds of the ballast.
//
// It stays off where it could hurt: THP "always" (nothing to do) or
// "never", GODEBUG=disablethp=1 (Go's own switch), strict overcommit
// (vm.overcommit_memory=2, where a large mapping could fail and the
// runtime would abort), a GOMEMLIMIT (the freed ballast would count
// against it until scavenged), 32-bit platforms, and ballasts beyond half
// of physical memory. A small heap (a dev agent) never reaches MinGoal, so
// its resident size is unchanged.
//
// Other costs: 2 MiB pages round a heap of a few hundred MB up (see
// BenchmarkPlacements10x10000Servers3's server-RSS-MB), and where the
// kernel's THP defrag setting is "madvise" (the default) a fault in an
// advised range on a machine with no free huge page compacts memory
// first, a stall of its own. GODEBUG=disablethp=1 turns it off even when
// asked for.
//
// Only the agent and the simulator start it (agent/cli, through
// StartFromEnv); it imports only the standard library and
// golang.org/x/sys.
package hugepages
