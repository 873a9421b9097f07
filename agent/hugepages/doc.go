// Package hugepages backs the growth of a long-running process's Go heap
// with transparent huge pages (THP) where the kernel offers them only on
// request (/sys/kernel/mm/transparent_hugepage/enabled is "madvise", the
// default of most distributions).
//
// Why: a server's heap grows to gigabytes (10,000 nodes and 100,000
// allocs take 1.4 GB), and with 4 KiB pages every page of it costs a page
// fault on first touch: about 400,000 faults and a tenth of the leader's
// CPU in that whole-path benchmark. With 2 MiB pages the faults fall 20x
// and the TLB covers the heap. The Go runtime no longer asks for huge pages
// itself (it did briefly in Go 1.21), and it maps its heap in 4 MiB steps
// that each start a new mapping, so advising the heap once is not enough.
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
// The cost: 2 MiB pages round a heap of a few hundred MB up (the
// 3-server benchmark's servers held ~20% more), and where the kernel's
// THP defrag setting is "madvise" (the default) a fault in an advised
// range on a machine with no free huge page compacts memory first, a
// stall of its own. GODEBUG=disablethp=1 turns it off.
//
// Only the agent and the simulator start it (agent/cli); it imports only
// the standard library and golang.org/x/sys.
package hugepages
