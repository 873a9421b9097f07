package fsm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
	"github.com/drover/drover/server/state"
	"github.com/hashicorp/raft"
)

// Hooks lets the server react to applied changes (enqueue evals into the
// broker, unblock blocked evals on freed capacity, ...): it is the one
// path from a committed change to the leader's reactions. Methods are
// called synchronously from Apply after the change is committed, on every
// server (leader or not), and must not block: hand the work to a goroutine
// or a buffered channel. Arguments are stored objects: never modify them.
type Hooks interface {
	// EvalsUpserted gets every eval a command wrote (with its indexes).
	EvalsUpserted(evals []*api.Evaluation)
	// AllocsUpdated gets every alloc a command touched at index.
	AllocsUpdated(index uint64, changes []AllocChange)
	// NodesUpdated gets the node a command registered or updated at index.
	NodesUpdated(index uint64, nodes []*api.Node)
}

// AllocChange is one alloc a command touched: Before is the stored version
// before the command (nil for a new alloc), After the one after it.
type AllocChange = state.AllocChange

// RestoreHook is an optional Hooks ability: called after Restore swapped
// in a new store.
type RestoreHook interface {
	StateRestored(s *state.StateStore)
}

// QueueHook is an optional Hooks ability: called with the queues a
// command created or changed (a raised limit may let blocked work run).
type QueueHook interface {
	QueuesUpdated(index uint64, queues []*api.Queue)
}

// Config configures an FSM.
type Config struct {
	Logger *slog.Logger
	// Hooks may be nil; see also SetHooks.
	Hooks Hooks
}

// FSM is the Raft state machine. See the package doc for concurrency.
type FSM struct {
	logger *slog.Logger

	mu    sync.RWMutex
	state *state.StateStore
	hooks Hooks
	pre   predecodes // the leader's plans decoded off this goroutine (predecode.go)
}

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM over a new, empty state store.
func New(cfg Config) *FSM {
	l := cfg.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &FSM{logger: l.With("component", "fsm"), state: state.NewStateStore(), hooks: cfg.Hooks}
}

// State returns the current store (replaced by Restore).
func (f *FSM) State() *state.StateStore {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// SetHooks installs the server's hooks (nil removes them).
func (f *FSM) SetHooks(h Hooks) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks = h
}

func (f *FSM) getHooks() Hooks {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.hooks
}

// Apply applies one log entry. It returns the entry's index (uint64) on
// success and an error otherwise; the error wraps api sentinels where the
// request was at fault (the server surfaces it to the caller). A failed
// entry changes no table but still advances LatestIndex (MarkApplied).
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	var t MessageType
	var err error
	if req, ok := f.takePredecoded(l.Data); ok {
		t = ApplyPlanResultsType
		err = f.applyPlanResults(f.State(), l.Index, req)
	} else {
		var body json.RawMessage
		scratch := decodeBufs.Get().(*[]byte)
		t, body, err = decode(l.Data, scratch)
		if err == nil {
			err = f.apply(t, l.Index, body) // decodes (copies) the body
		}
		decodeBufs.Put(scratch)
	}
	if err != nil {
		// The entry is applied (as a no-op) all the same: waiters on
		// this index must not hang.
		if merr := f.State().MarkApplied(l.Index); merr != nil {
			f.logger.Error("mark failed entry applied", "index", l.Index, "err", merr)
		}
		f.logger.Debug("raft entry rejected", "index", l.Index, "type", t.String(), "err", err)
		return &RejectedError{Type: t, Index: l.Index, Err: err}
	}
	return l.Index
}

// RejectedError is the response of an entry the state refused (applied
// as a no-op): Err is why, for the caller to answer with; the command
// type and index are for logs, not for users.
type RejectedError struct {
	Type  MessageType
	Index uint64
	Err   error
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("apply %v at %d: %v", e.Type, e.Index, e.Err)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// applyPlanResults applies a decoded ApplyPlanResults command.
func (f *FSM) applyPlanResults(s *state.StateStore, index uint64, req *ApplyPlanResultsRequest) error {
	evals := req.Evals // upserted by allocWrite, after the plan
	req.Evals = nil
	return f.allocWrite(s, index, evals, func(tx *state.Txn) error {
		return tx.UpsertPlanResults(req)
	})
}

func decodeBody[T any](body json.RawMessage) (*T, error) {
	v := new(T)
	if err := codec.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
	}
	return v, nil
}

func (f *FSM) apply(t MessageType, index uint64, body json.RawMessage) error {
	s := f.State()
	switch t {
	case JobRegisterType:
		req, err := decodeBody[JobRegisterRequest](body)
		if err != nil {
			return err
		}
		evals := nonNil(req.Eval)
		return f.write(s, index, evals, func(tx *state.Txn) error { return tx.UpsertJob(req.Job) })
	case JobDeregisterType:
		req, err := decodeBody[JobDeregisterRequest](body)
		if err != nil {
			return err
		}
		evals := nonNil(req.Eval)
		return f.write(s, index, evals, func(tx *state.Txn) error {
			if req.Purge {
				return tx.DeleteJob(req.Namespace, req.JobID)
			}
			return tx.StopJob(req.Namespace, req.JobID, req.SubmitTime)
		})
	case EvalUpdateType:
		req, err := decodeBody[EvalUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.write(s, index, req.Evals, nil)
	case EvalDeleteType:
		req, err := decodeBody[EvalDeleteRequest](body)
		if err != nil {
			return err
		}
		return s.DeleteEvals(index, req.Evals, req.Allocs)
	case NodeRegisterType:
		req, err := decodeBody[NodeRegisterRequest](body)
		if err != nil {
			return err
		}
		var id string
		if req.Node != nil {
			id = req.Node.ID // a nil node fails in UpsertNode
		}
		return f.nodeWrite(s, index, id, req.Evals, func(tx *state.Txn) error { return tx.UpsertNode(req.Node) })
	case NodeDeregisterType:
		req, err := decodeBody[NodeDeregisterRequest](body)
		if err != nil {
			return err
		}
		return f.write(s, index, req.Evals, func(tx *state.Txn) error { return tx.DeleteNode(req.NodeIDs) })
	case NodeStatusUpdateType:
		req, err := decodeBody[NodeStatusUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.nodeWrite(s, index, req.NodeID, req.Evals, func(tx *state.Txn) error {
			if err := tx.UpdateNodeStatus(req.NodeID, req.Status, req.UpdatedAt, req.Event); err != nil {
				return err
			}
			if req.Status != api.NodeStatusDown {
				return nil
			}
			// Every live alloc on the node now, not only those the
			// leader saw (state/node_loss.go).
			return tx.LoseNodeAllocs(req.NodeID, req.UpdatedAt*int64(time.Second), req.Evals)
		})
	case NodeDrainUpdateType:
		req, err := decodeBody[NodeDrainUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.nodeWrite(s, index, req.NodeID, req.Evals, func(tx *state.Txn) error {
			return tx.UpdateNodeDrain(req.NodeID, req.DrainStrategy, req.MarkEligible, req.Event)
		})
	case NodeEligibilityUpdateType:
		req, err := decodeBody[NodeEligibilityUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.nodeWrite(s, index, req.NodeID, req.Evals, func(tx *state.Txn) error {
			return tx.UpdateNodeEligibility(req.NodeID, req.Eligibility, req.Event)
		})
	case NodeMIGUpdateType:
		req, err := decodeBody[NodeMIGUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.nodeWrite(s, index, req.NodeID, nil, func(tx *state.Txn) error {
			return tx.UpdateNodeMIG(req.NodeID, req.Change, req.Event)
		})
	case AllocClientUpdateType:
		req, err := decodeBody[AllocClientUpdateRequest](body)
		if err != nil {
			return err
		}
		return f.allocWrite(s, index, req.Evals, func(tx *state.Txn) error {
			return tx.UpdateAllocsFromClient(req.Allocs)
		})
	case AllocDesiredTransitionType:
		req, err := decodeBody[AllocDesiredTransitionRequest](body)
		if err != nil {
			return err
		}
		return f.allocWrite(s, index, req.Evals, func(tx *state.Txn) error {
			return tx.UpdateAllocsDesiredTransitions(req.Transitions)
		})
	case AllocUpsertType:
		req, err := decodeBody[AllocUpsertRequest](body)
		if err != nil {
			return err
		}
		return f.allocWrite(s, index, req.Evals, func(tx *state.Txn) error {
			return tx.UpsertAllocs(req.Allocs)
		})
	case ApplyPlanResultsType:
		req, err := decodeBody[ApplyPlanResultsRequest](body)
		if err != nil {
			return err
		}
		return f.applyPlanResults(s, index, req)
	case DeploymentUpsertType:
		req, err := decodeBody[DeploymentUpsertRequest](body)
		if err != nil {
			return err
		}
		return f.write(s, index, req.Evals, func(tx *state.Txn) error { return tx.UpsertDeployment(req.Deployment) })
	case DeploymentUpdateType:
		req, err := decodeBody[DeploymentUpdateRequest](body)
		if err != nil {
			return err
		}
		evals := req.Evals // upserted by allocWrite, after the update
		req.Evals = nil
		return f.allocWrite(s, index, evals, func(tx *state.Txn) error {
			return tx.UpdateDeployment(req)
		})
	case JobStabilityType:
		req, err := decodeBody[JobStabilityRequest](body)
		if err != nil {
			return err
		}
		return s.Write(index, func(tx *state.Txn) error {
			return tx.SetJobStable(req.Namespace, req.JobID, req.Version, req.Stable)
		})
	case SchedulerConfigType:
		req, err := decodeBody[SchedulerConfigRequest](body)
		if err != nil {
			return err
		}
		return s.SetSchedulerConfig(index, req.Config, req.CAS, req.CASIndex)
	case NodePoolUpsertType:
		req, err := decodeBody[NodePoolUpsertRequest](body)
		if err != nil {
			return err
		}
		return s.UpsertNodePools(index, req.NodePools)
	case NamespaceUpsertType:
		req, err := decodeBody[NamespaceUpsertRequest](body)
		if err != nil {
			return err
		}
		return s.UpsertNamespaces(index, req.Namespaces)
	case NamespaceDeleteType:
		req, err := decodeBody[NamespaceDeleteRequest](body)
		if err != nil {
			return err
		}
		return s.DeleteNamespaces(index, req.Names)
	case ACLWriteType:
		req, err := decodeBody[state.ACLWrite](body)
		if err != nil {
			return err
		}
		return s.ApplyACL(index, req)
	case VariableApplyType:
		req, err := decodeBody[VariableApplyRequest](body)
		if err != nil {
			return err
		}
		return s.ApplyVariable(index, req)
	case RootKeyUpsertType:
		req, err := decodeBody[RootKeyUpsertRequest](body)
		if err != nil {
			return err
		}
		return s.UpsertRootKey(index, req.Key)
	case ServiceUpdateType:
		req, err := decodeBody[ServiceUpdateRequest](body)
		if err != nil {
			return err
		}
		return s.UpdateNodeServices(index, req.NodeID, req.Upserts, req.Deletes)
	case NodePoolDeleteType:
		req, err := decodeBody[NodePoolDeleteRequest](body)
		if err != nil {
			return err
		}
		return s.DeleteNodePools(index, req.Names)
	case QueueUpsertType:
		req, err := decodeBody[QueueUpsertRequest](body)
		if err != nil {
			return err
		}
		if err := s.UpsertQueues(index, req.Queues); err != nil {
			return err
		}
		if qh, ok := f.getHooks().(QueueHook); ok {
			qh.QueuesUpdated(index, req.Queues)
		}
		return nil
	case QueueDeleteType:
		req, err := decodeBody[QueueDeleteRequest](body)
		if err != nil {
			return err
		}
		return s.DeleteQueues(index, req.Names)
	}
	return fmt.Errorf("apply %v: %w", t, ErrUnknownType)
}

func nonNil(e *api.Evaluation) []*api.Evaluation {
	if e == nil {
		return nil
	}
	return []*api.Evaluation{e}
}

// write runs fn (optional) and upserts evals in one transaction, then
// hands the evals to the hooks (the broker and blocked tracker).
func (f *FSM) write(s *state.StateStore, index uint64, evals []*api.Evaluation, fn func(*state.Txn) error) error {
	var created []*api.Evaluation
	if err := s.Write(index, func(tx *state.Txn) error {
		if fn != nil {
			if err := fn(tx); err != nil {
				return err
			}
		}
		created = tx.CreatedEvals()
		return tx.UpsertEvals(evals)
	}); err != nil {
		return err
	}
	if len(created) > 0 { // evals for allocs lost to a down node
		evals = append(slices.Clip(evals), created...)
	}
	if h := f.getHooks(); h != nil && len(evals) > 0 {
		h.EvalsUpserted(evals)
	}
	return nil
}

// nodeWrite is allocWrite (a node going down loses its allocs) that also
// reports the node to the hooks.
func (f *FSM) nodeWrite(s *state.StateStore, index uint64, nodeID string, evals []*api.Evaluation, fn func(*state.Txn) error) error {
	if err := f.allocWrite(s, index, evals, fn); err != nil {
		return err
	}
	h := f.getHooks()
	if h == nil {
		return nil
	}
	if n, err := s.NodeByID(nil, nodeID); err == nil && n != nil {
		h.NodesUpdated(index, []*api.Node{n})
	}
	return nil
}

// allocWrite runs fn and the evals in one transaction, then reports the
// allocs it wrote (stored versions before and after) to the hooks.
func (f *FSM) allocWrite(s *state.StateStore, index uint64, evals []*api.Evaluation, fn func(*state.Txn) error) error {
	var changes []AllocChange
	if err := f.write(s, index, evals, func(tx *state.Txn) error {
		err := fn(tx)
		changes = tx.AllocChanges()
		return err
	}); err != nil {
		return err
	}
	if h := f.getHooks(); h != nil && len(changes) > 0 {
		h.AllocsUpdated(index, changes)
	}
	return nil
}
