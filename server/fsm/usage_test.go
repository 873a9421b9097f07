package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/google/go-cmp/cmp"
)

// usageEntries is a seeded random log of GPU allocs that start, restart,
// finish, fail, get lost or are deleted, with server stamps from the
// entries (never the wall clock).
func usageEntries(seed uint64, n int) []func(a *applier) error {
	r := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	var out []func(a *applier) error
	out = append(out, func(a *applier) error {
		return a.apply(NodeRegisterType, NodeRegisterRequest{Node: gpuNode("n1")})
	})
	started := map[string]time.Time{}
	var live []string
	for i := 0; i < n; i++ {
		clock = clock.Add(time.Duration(r.IntN(7200)) * time.Second)
		now := clock
		switch k := r.IntN(5); {
		case k == 0 || len(live) == 0:
			id := fmt.Sprintf("a%d", i)
			j := job(fmt.Sprintf("j%d", r.IntN(4)))
			j.Queue = []string{"", "team-a", "team-b/train"}[r.IntN(3)]
			al := alloc(id, j.ID, "n1")
			al.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
				Cpu: api.AllocatedCpuResources{CpuShares: int64(500 * (1 + r.IntN(4)))}, Memory: api.AllocatedMemoryResources{MemoryMB: 1024},
				Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"g0"}}}}}}
			out = append(out, func(a *applier) error {
				return a.apply(ApplyPlanResultsType, ApplyPlanResultsRequest{Job: j, AllocsPlaced: []*api.Allocation{al}})
			}, func(a *applier) error {
				return a.apply(AllocClientUpdateType, AllocClientUpdateRequest{Allocs: []*api.Allocation{
					taskUpdate(id, api.AllocClientStatusRunning, now, time.Time{}, now)}})
			})
			started[id] = now
			live = append(live, id)
		default:
			x := r.IntN(len(live))
			id := live[x]
			var u *api.Allocation
			switch k {
			case 1: // restart
				u = taskUpdate(id, api.AllocClientStatusRunning, now, time.Time{}, now)
			case 2:
				u = taskUpdate(id, api.AllocClientStatusComplete, started[id], now, now)
			case 3:
				u = taskUpdate(id, api.AllocClientStatusLost, started[id], time.Time{}, now)
			case 4:
				out = append(out, func(a *applier) error {
					return a.apply(EvalDeleteType, EvalDeleteRequest{Allocs: []string{id}})
				})
			}
			if u != nil {
				out = append(out, func(a *applier) error {
					return a.apply(AllocClientUpdateType, AllocClientUpdateRequest{Allocs: []*api.Allocation{u}})
				})
			}
			if k != 1 {
				live = append(live[:x], live[x+1:]...)
			}
		}
	}
	return out
}

func gpuNode(id string) *api.Node {
	n := node(id)
	n.NodeResources.Cpu.TotalCpuCores = 2
	return n
}

func taskUpdate(id, status string, started, finished, stamp time.Time) *api.Allocation {
	return &api.Allocation{ID: id, ClientStatus: status, ModifyTime: stamp.UnixNano(),
		TaskStates: map[string]*api.TaskState{"t": {State: api.TaskStateRunning, StartedAt: started, FinishedAt: finished}}}
}

var usageTables = []string{state.TableUsage, state.TableUsageOpen, state.TableUsageTotals}

// TestUsageLedgerDeterministic: the same entries give the same ledger on
// every FSM, also on one restored from a snapshot taken half way that
// applies the rest.
func TestUsageLedgerDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		entries := usageEntries(seed, 200)
		f1, f2 := New(Config{}), New(Config{})
		a1, a2 := &applier{t: t, f: f1}, &applier{t: t, f: f2}
		var a3 *applier
		for i, e := range entries {
			for _, a := range []*applier{a1, a2, a3} {
				if a == nil {
					continue
				}
				if err := e(a); err != nil {
					t.Fatalf("seed %d entry %d: %v", seed, i, err)
				}
			}
			if i == len(entries)/2 {
				f3 := New(Config{})
				if err := f3.Restore(io.NopCloser(bytes.NewReader(persist(t, f1)))); err != nil {
					t.Fatal(err)
				}
				a3 = &applier{t: t, f: f3, index: a1.index}
			}
		}
		want := tables(t, f1.State())
		if len(want[state.TableUsage]) == 0 || len(want[state.TableUsageTotals]) == 0 {
			t.Fatalf("seed %d: the workload left an empty ledger", seed)
		}
		for name, f := range map[string]*FSM{"second FSM": f2, "restored half way": a3.f} {
			got := tables(t, f.State())
			for _, table := range usageTables {
				if diff := cmp.Diff(want[table], got[table]); diff != "" {
					t.Errorf("seed %d, %s, %s (-want +got):\n%s", seed, name, table, diff)
				}
			}
		}
	}
}

// TestRestoreWithoutUsageRecords: a snapshot from before the ledger (no
// record 14) restores everything else, with an empty ledger.
func TestRestoreWithoutUsageRecords(t *testing.T) {
	src := populated(t)
	data := persist(t, src)
	if n := len(tables(t, src.State())[state.TableUsageOpen]); n != 1 {
		t.Fatalf("fixture: %d open usage rows, want 1 (a1 runs)", n)
	}
	var old []byte
	for b := data; len(b) > 0; {
		size := 5 + int(binary.BigEndian.Uint32(b[1:5]))
		if recordType(b[0]) != recUsage {
			old = append(old, b[:size]...)
		}
		b = b[size:]
	}
	if len(old) == len(data) {
		t.Fatal("the snapshot has no usage records")
	}
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	got, want := tables(t, dst.State()), tables(t, src.State())
	for _, table := range usageTables {
		if len(got[table]) != 0 {
			t.Errorf("%s: %d rows after restoring an old snapshot", table, len(got[table]))
		}
	}
	if diff := cmp.Diff(want[state.TableAllocs], got[state.TableAllocs]); diff != "" {
		t.Errorf("allocs (-want +got):\n%s", diff)
	}
}
