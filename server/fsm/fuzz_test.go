package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/hashicorp/raft"
)

// FuzzApply feeds arbitrary bytes to Apply: it must return an error or an
// index, never panic.
func FuzzApply(f *testing.F) {
	for _, typ := range []MessageType{JobRegisterType, ApplyPlanResultsType, NodeRegisterType, AllocClientUpdateType,
		NodeDrainUpdateType, DeploymentUpsertType, EvalDeleteType, SchedulerConfigType, QueueUpsertType, QueueDeleteType} {
		b, _ := Encode(typ, map[string]any{})
		f.Add(b)
	}
	seed, _ := Encode(JobRegisterType, JobRegisterRequest{Job: job("web"), Eval: eval("e1", "web")})
	f.Add(seed)
	seed, _ = Encode(ApplyPlanResultsType, ApplyPlanResultsRequest{AllocsPlaced: nil,
		AllocsStopped: nil, DeploymentUpdates: nil})
	f.Add(seed)
	f.Add([]byte(nil))
	// Compressed entries: a plan past compressAbove, a block claiming a
	// huge length, and a truncated block.
	big := ApplyPlanResultsRequest{Job: job("web")}
	for k := range 300 {
		big.AllocsPlaced = append(big.AllocsPlaced, alloc(fmt.Sprintf("alloc-%04d", k), "web", fmt.Sprintf("node-%d", k%7)))
	}
	seed, _ = Encode(ApplyPlanResultsType, big)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{byte(ApplyPlanResultsType), compressedMark, 0xff, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Add(append([]byte{byte(ApplyPlanResultsType)}, `{"Version":1,"Body":{"AllocsPlaced":[null],"DeploymentUpdates":[null],"Job":{"ID":"x","TaskGroups":[null]}}}`...))
	f.Add(append([]byte{byte(NodeRegisterType)}, `{"Version":1,"Body":{"Node":{"ID":"n","Events":[null]}}}`...))
	f.Add(append([]byte{byte(QueueUpsertType)}, `{"Version":1,"Body":{"Queues":[null,{"Name":"a/b","Limit":{"GPUsByModel":{"":1}}}]}}`...))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := New(Config{Hooks: &recHooks{}})
		fsm.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		fsm.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: data}) // again, over existing state
	})
}

// FuzzRestore feeds arbitrary bytes to Restore: an error or a restored
// state, never a panic.
func FuzzRestore(f *testing.F) {
	// A small real snapshot: large seeds make input minimization crawl.
	small := New(Config{})
	a := &applier{t: &testing.T{}, f: small}
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: &api.Job{ID: "j", TaskGroups: []*api.TaskGroup{{Name: "g"}}}})
	a.mustApply(AllocUpsertType, AllocUpsertRequest{Allocs: []*api.Allocation{{ID: "a", JobID: "j", NodeID: "n"}}})
	f.Add(persist(&testing.T{}, small))
	f.Add(record(recHeader, `{"Format":1}`))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recAlloc, `{"Alloc":null}`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recJob, `null`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recSchedulerConfig, `{"SchedulerAlgorithm":"spread"}`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recQueue, `{"Name":"a","Limit":{"GPUs":1}}`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recQueue, `null`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recUsage, `{}`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recUsage,
		`{"Bucket":{"Namespace":"default","JobID":"j","Queue":"default","Bucket":3600,"GPUSeconds":{"nvidia/gpu/H100":7200}}}`)...))
	f.Add(append(record(recHeader, `{"Format":1}`), record(recUsage, `{"Open":{"AllocID":"a","Start":1,"Rate":{"GPUs":{"m":2}}}}`)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := New(Config{})
		_ = fsm.Restore(io.NopCloser(bytes.NewReader(data)))
	})
}
