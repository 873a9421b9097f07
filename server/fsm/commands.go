package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
	"github.com/drover/drover/server/state"
)

// MessageType is the first byte of every Raft log entry.
type MessageType uint8

// Message types. Values are persisted in Raft logs: never renumber, only add.
const (
	JobRegisterType            MessageType = 1
	JobDeregisterType          MessageType = 2
	EvalUpdateType             MessageType = 3
	EvalDeleteType             MessageType = 4
	NodeRegisterType           MessageType = 5
	NodeDeregisterType         MessageType = 6
	NodeStatusUpdateType       MessageType = 7
	NodeDrainUpdateType        MessageType = 8
	NodeEligibilityUpdateType  MessageType = 9
	AllocClientUpdateType      MessageType = 10
	AllocDesiredTransitionType MessageType = 11
	ApplyPlanResultsType       MessageType = 12
	DeploymentUpsertType       MessageType = 13
	AllocUpsertType            MessageType = 14
	JobStabilityType           MessageType = 15
	DeploymentUpdateType       MessageType = 16
	SchedulerConfigType        MessageType = 17
	NodePoolUpsertType         MessageType = 18
	NodePoolDeleteType         MessageType = 19
	QueueUpsertType            MessageType = 20
	QueueDeleteType            MessageType = 21
	NamespaceUpsertType        MessageType = 23
	NamespaceDeleteType        MessageType = 24
	ServiceUpdateType          MessageType = 25
	RootKeyUpsertType          MessageType = 26
	ACLWriteType               MessageType = 27
	NodeMIGUpdateType          MessageType = 28
	VariableApplyType          MessageType = 29
)

var typeNames = map[MessageType]string{
	JobRegisterType: "JobRegister", JobDeregisterType: "JobDeregister", EvalUpdateType: "EvalUpdate",
	EvalDeleteType: "EvalDelete", NodeRegisterType: "NodeRegister", NodeDeregisterType: "NodeDeregister",
	NodeStatusUpdateType: "NodeStatusUpdate", NodeDrainUpdateType: "NodeDrainUpdate",
	NodeEligibilityUpdateType: "NodeEligibilityUpdate", AllocClientUpdateType: "AllocClientUpdate",
	AllocDesiredTransitionType: "AllocDesiredTransition", ApplyPlanResultsType: "ApplyPlanResults",
	DeploymentUpsertType: "DeploymentUpsert", AllocUpsertType: "AllocUpsert", JobStabilityType: "JobStability",
	DeploymentUpdateType: "DeploymentUpdate", SchedulerConfigType: "SchedulerConfig",
	NodePoolUpsertType: "NodePoolUpsert", NodePoolDeleteType: "NodePoolDelete",
	QueueUpsertType: "QueueUpsert", QueueDeleteType: "QueueDelete",
	NamespaceUpsertType: "NamespaceUpsert", NamespaceDeleteType: "NamespaceDelete",
	ServiceUpdateType: "ServiceUpdate", RootKeyUpsertType: "RootKeyUpsert", ACLWriteType: "ACLWrite",
	NodeMIGUpdateType: "NodeMIGUpdate", VariableApplyType: "VariableApply",
}

func (t MessageType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// CommandVersion is the envelope version Encode writes; Apply accepts
// versions 1..CommandVersion.
const CommandVersion = 1

// Errors of decoding.
var (
	// ErrUnknownType: the entry's message type is not one this FSM knows.
	ErrUnknownType = errors.New("unknown raft message type")
	// ErrUnsupportedVersion: the body's version is newer than this FSM.
	ErrUnsupportedVersion = errors.New("unsupported command version")
)

// envelope is the JSON body after the type byte.
type envelope struct {
	Version int             `json:"Version"`
	Body    json.RawMessage `json:"Body"`
}

// envelopeHead is how Encode's entries start after the type byte.
var envelopeHead = `{"Version":` + strconv.Itoa(CommandVersion) + `,"Body":`

// Large entries are compressed: after the type byte, compressedMark (a
// byte no JSON text starts with) and then the envelope as an S2 block
// (github.com/klauspost/compress/s2). A 10,000-alloc plan is ~11 MB of
// JSON that compresses several times over in a few milliseconds; every
// byte saved is a byte Raft does not copy, msgpack-frame, write to the
// log and send to followers.
const (
	compressedMark = 0x01
	// compressAbove is the envelope size from which Encode compresses.
	compressAbove = 16 << 10
	// maxCompressRatio bounds how much a block may expand: Encode writes
	// a more compressible envelope (plans compress 4-10 times) as it is,
	// and Decode refuses a block that claims more, so a damaged or
	// crafted entry of a few bytes cannot make it allocate gigabytes.
	maxCompressRatio = 64
)

// encodeBufs are Encode's scratch buffers (the JSON entry, then its
// compressed form), kept between calls: a plan's ~11 MB would otherwise
// be allocated, faulted in and collected twice per plan.
var encodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// Encode builds a log entry: the type byte then {"Version":1,"Body":body},
// S2-compressed behind compressedMark when larger than compressAbove.
func Encode(t MessageType, body any) ([]byte, error) {
	if _, ok := typeNames[t]; !ok {
		return nil, fmt.Errorf("encode %v: %w", t, ErrUnknownType)
	}
	jp := encodeBufs.Get().(*[]byte)
	defer encodeBufs.Put(jp)
	w := bytes.NewBuffer((*jp)[:0])
	w.WriteByte(byte(t))
	// The envelope by hand around the body, the same bytes as envelope's
	// encoding: encoding the envelope would copy and re-scan the body.
	w.WriteString(envelopeHead)
	var err error
	if t == ApplyPlanResultsType { // entries of up to ~11 MB: a field and an alloc at a time
		err = codec.EncodeFields(w, body)
	} else if err = codec.Encode(w, body); err == nil {
		w.Truncate(w.Len() - 1) // Encode's newline
	}
	if err != nil {
		return nil, fmt.Errorf("encode %v: %w", t, err)
	}
	w.WriteByte('}')
	entry := w.Bytes()
	*jp = entry
	n := len(entry) - 1
	if n <= compressAbove {
		return bytes.Clone(entry), nil
	}
	zp := encodeBufs.Get().(*[]byte)
	defer encodeBufs.Put(zp)
	if need := 2 + s2.MaxEncodedLen(n); cap(*zp) < need {
		*zp = make([]byte, need)
	}
	z := (*zp)[:cap(*zp)]
	z[0], z[1] = byte(t), compressedMark
	block := s2.Encode(z[2:], entry[1:])
	if n > maxCompressRatio*len(block) {
		return bytes.Clone(entry), nil
	}
	return bytes.Clone(z[:2+len(block)]), nil
}

// Decode splits a log entry into its type and body, checking the version.
func Decode(buf []byte) (MessageType, json.RawMessage, error) { return decode(buf, nil) }

// decodeBufs are the scratch buffers Apply decompresses entries into:
// the body is decoded (and copied) before the buffer goes back, so a
// plan's few MB are not allocated and collected again per entry.
var decodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// decode is Decode; with scratch it decompresses into *scratch (grown as
// needed, and kept there), and the body it returns lives only until
// *scratch is used again.
func decode(buf []byte, scratch *[]byte) (MessageType, json.RawMessage, error) {
	if len(buf) == 0 {
		return 0, nil, fmt.Errorf("decode: empty entry: %w", api.ErrBadRequest)
	}
	t := MessageType(buf[0])
	if _, ok := typeNames[t]; !ok {
		return t, nil, fmt.Errorf("decode %v: %w", t, ErrUnknownType)
	}
	if len(buf) > 1 && buf[1] == compressedMark {
		n, err := s2.DecodedLen(buf[2:])
		if err != nil || n > maxCompressRatio*len(buf[2:]) {
			return t, nil, fmt.Errorf("decode %v: compressed envelope of %d bytes: %w", t, n, api.ErrBadRequest)
		}
		var env []byte
		if scratch == nil {
			env = make([]byte, 1, 1+n)
		} else {
			if cap(*scratch) < 1+n {
				*scratch = make([]byte, 1+n)
			}
			env = (*scratch)[:1]
		}
		env[0] = byte(t)
		plain, err := s2.Decode(env[1:1+n], buf[2:])
		if err != nil {
			return t, nil, fmt.Errorf("decode %v: %w: %w", t, api.ErrBadRequest, err)
		}
		buf = env[:1+len(plain)]
	}
	// Fast path for what Encode writes: the body sliced out, no copy and
	// one scan (json.Valid) instead of the envelope's decode.
	if head := envelopeHead; len(buf) > 1+len(head) && string(buf[1:1+len(head)]) == head && buf[len(buf)-1] == '}' {
		if body := buf[1+len(head) : len(buf)-1]; codec.Valid(body) {
			return t, body, nil
		}
	}
	var env envelope
	if err := json.Unmarshal(buf[1:], &env); err != nil {
		return t, nil, fmt.Errorf("decode %v: %w: %w", t, api.ErrBadRequest, err)
	}
	if env.Version < 1 || env.Version > CommandVersion {
		return t, nil, fmt.Errorf("decode %v: version %d: %w", t, env.Version, ErrUnsupportedVersion)
	}
	return t, env.Body, nil
}

// JobRegisterRequest registers a job version and its eval together.
// SubmitTime goes in Job.SubmitTime.
type JobRegisterRequest struct {
	Job  *api.Job        `json:"Job"`
	Eval *api.Evaluation `json:"Eval,omitempty"`
}

// JobDeregisterRequest stops (a new version with Stop set) or purges a job,
// with its eval.
type JobDeregisterRequest struct {
	Namespace  string          `json:"Namespace"`
	JobID      string          `json:"JobID"`
	Purge      bool            `json:"Purge"`
	SubmitTime int64           `json:"SubmitTime,omitempty"`
	Eval       *api.Evaluation `json:"Eval,omitempty"`
}

// EvalUpdateRequest creates or updates evals.
type EvalUpdateRequest struct {
	Evals []*api.Evaluation `json:"Evals"`
}

// EvalDeleteRequest garbage-collects evals and allocs.
type EvalDeleteRequest struct {
	Evals  []string `json:"Evals"`
	Allocs []string `json:"Allocs"`
}

// NodeRegisterRequest registers a node (and any evals it causes).
type NodeRegisterRequest struct {
	Node  *api.Node         `json:"Node"`
	Evals []*api.Evaluation `json:"Evals,omitempty"`
}

// NodeDeregisterRequest removes nodes.
type NodeDeregisterRequest struct {
	NodeIDs []string          `json:"NodeIDs"`
	Evals   []*api.Evaluation `json:"Evals,omitempty"`
}

// NodeStatusUpdateRequest sets a node's status, with evals for its allocs.
type NodeStatusUpdateRequest struct {
	NodeID    string            `json:"NodeID"`
	Status    string            `json:"Status"`
	UpdatedAt int64             `json:"UpdatedAt"`
	Event     *api.NodeEvent    `json:"Event,omitempty"`
	Evals     []*api.Evaluation `json:"Evals,omitempty"`
}

// NodeDrainUpdateRequest starts/ends a drain (nil DrainStrategy ends it).
type NodeDrainUpdateRequest struct {
	NodeID        string             `json:"NodeID"`
	DrainStrategy *api.DrainStrategy `json:"DrainStrategy,omitempty"`
	MarkEligible  bool               `json:"MarkEligible"`
	Event         *api.NodeEvent     `json:"Event,omitempty"`
	Evals         []*api.Evaluation  `json:"Evals,omitempty"`
}

// NodeEligibilityUpdateRequest sets a node's eligibility.
type NodeEligibilityUpdateRequest struct {
	NodeID      string            `json:"NodeID"`
	Eligibility string            `json:"Eligibility"`
	Event       *api.NodeEvent    `json:"Event,omitempty"`
	Evals       []*api.Evaluation `json:"Evals,omitempty"`
}

// NodeMIGUpdateRequest asks a MIG layout change of a node (pending until
// its client applies it).
type NodeMIGUpdateRequest struct {
	NodeID string             `json:"NodeID"`
	Change *api.NodeMIGChange `json:"Change"`
	Event  *api.NodeEvent     `json:"Event,omitempty"`
}

// AllocClientUpdateRequest carries a client's alloc status batch (only
// client-owned fields are applied) and evals (e.g. for failed allocs).
type AllocClientUpdateRequest struct {
	Allocs []*api.Allocation `json:"Allocs"`
	Evals  []*api.Evaluation `json:"Evals,omitempty"`
}

// AllocDesiredTransitionRequest sets desired transitions by alloc ID.
type AllocDesiredTransitionRequest struct {
	Transitions map[string]*api.DesiredTransition `json:"Transitions"`
	Evals       []*api.Evaluation                 `json:"Evals,omitempty"`
}

// ApplyPlanResultsRequest is the plan applier's commit (see state).
type ApplyPlanResultsRequest = state.ApplyPlanResultsRequest

// DeploymentUpsertRequest creates or updates a deployment.
type DeploymentUpsertRequest struct {
	Deployment *api.Deployment   `json:"Deployment"`
	Evals      []*api.Evaluation `json:"Evals,omitempty"`
}

// AllocUpsertRequest stores server-side alloc changes (e.g. a stop).
type AllocUpsertRequest struct {
	Allocs []*api.Allocation `json:"Allocs"`
	Evals  []*api.Evaluation `json:"Evals,omitempty"`
}

// DeploymentUpdateRequest is a deployment watcher or operator step (alloc
// health, status, promotion, stable version, auto-revert job, evals).
type DeploymentUpdateRequest = state.DeploymentUpdateRequest

// JobStabilityRequest marks a job version stable or not.
type JobStabilityRequest struct {
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	Version   uint64 `json:"Version"`
	Stable    bool   `json:"Stable"`
}

// SchedulerConfigRequest replaces the scheduler configuration; with CAS
// only if the stored ModifyIndex (0 when unset) is CASIndex, failing with
// api.ErrIndexConflict otherwise.
type SchedulerConfigRequest struct {
	Config   *api.SchedulerConfiguration `json:"Config"`
	CAS      bool                        `json:"CAS,omitempty"`
	CASIndex uint64                      `json:"CASIndex,omitempty"`
}

// NodePoolUpsertRequest creates or replaces node pools (all or none).
type NodePoolUpsertRequest struct {
	NodePools []*api.NodePool `json:"NodePools"`
}

// NodePoolDeleteRequest deletes node pools (all or none; see
// state.Txn.DeleteNodePools for what can't be deleted).
type NodePoolDeleteRequest struct {
	Names []string `json:"Names"`
}

// QueueUpsertRequest creates or replaces queues (all or none; see
// state.Txn.UpsertQueues for the tree checks).
type QueueUpsertRequest struct {
	Queues []*api.Queue `json:"Queues"`
}

// QueueDeleteRequest deletes queues (all or none; see
// state.Txn.DeleteQueues for what can't be deleted).
type QueueDeleteRequest struct {
	Names []string `json:"Names"`
}

// NamespaceUpsertRequest creates or replaces namespaces (all or none).
type NamespaceUpsertRequest struct {
	Namespaces []*api.Namespace `json:"Namespaces"`
}

// NamespaceDeleteRequest deletes namespaces (all or none; not the default
// one, not one with jobs).
type NamespaceDeleteRequest struct {
	Names []string `json:"Names"`
}

// ServiceUpdateRequest writes and deletes native service registrations:
// a client's for its node's allocs (NodeID set), or an operator's deletes
// (NodeID empty, no upserts). See state.Txn.UpdateNodeServices.
type ServiceUpdateRequest struct {
	NodeID  string                     `json:"NodeID,omitempty"`
	Upserts []*api.ServiceRegistration `json:"Upserts,omitempty"`
	Deletes []string                   `json:"Deletes,omitempty"`
}

// RootKeyUpsertRequest stores a keyring key (see state.StateStore.UpsertRootKey).
type RootKeyUpsertRequest struct {
	Key *state.RootKey `json:"Key"`
}

// VariableApplyRequest is a variable write (items sealed by the leader;
// see state.Txn.ApplyVariable).
type VariableApplyRequest = state.VariableApply
