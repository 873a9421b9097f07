package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/hashicorp/raft"
)

// recordType tags each record of a snapshot stream. Persisted: never
// renumber, only add.
type recordType uint8

const (
	recHeader     recordType = 1
	recJob        recordType = 2
	recJobVersion recordType = 3
	recJobSummary recordType = 4
	recNode       recordType = 5
	recEval       recordType = 6
	recDeployment recordType = 7
	recAllocJob   recordType = 8 // a job shared by the allocs that follow
	recAlloc      recordType = 9
	recIndex      recordType = 10
	// recSchedulerConfig: absent from snapshots written before it
	// existed (and from any taken before a configuration was set).
	recSchedulerConfig recordType = 11
	// recNodePool: absent from snapshots written before pools were
	// stored (restoring their nodes creates the pools).
	recNodePool recordType = 12
	// recQueue: absent from snapshots written before queues were stored
	// (their jobs count against the implicit "default" or a queue that
	// must be applied again).
	recQueue recordType = 13
	// recUsage: one row of the usage ledger (a bucket, a running alloc's
	// open interval or a queue's total; see usageRecord). Absent from
	// snapshots written before the ledger: they restore with it empty.
	recUsage recordType = 14
	// recNamespace: absent from snapshots written before namespaces were
	// objects (only the built-in default then).
	recNamespace recordType = 15
	// recService: a native service registration; absent from snapshots
	// written before them.
	recService recordType = 16
	// recRootKey: a keyring key; absent from snapshots written before
	// workload identities.
	recRootKey recordType = 17
	// recACLPolicy, recACLRole, recACLToken: ACL objects; absent from
	// snapshots written before ACLs.
	recACLPolicy recordType = 18
	recACLRole   recordType = 19
	recACLToken  recordType = 20
	// recACLAuthMethod, recACLBindingRule: SSO objects; absent from
	// snapshots written before auth methods.
	recACLAuthMethod  recordType = 21
	recACLBindingRule recordType = 22
	// recVariable: a variable (items sealed); absent from snapshots
	// written before variables.
	recVariable    recordType = 23
	snapshotFormat            = 1
	maxRecordSize             = 256 << 20
)

// ErrUnknownRecord: a snapshot holds a record type this FSM does not know.
// Restore fails as a whole; nothing is partially restored.
var ErrUnknownRecord = errors.New("unknown snapshot record type")

// ErrBadSnapshot: a snapshot stream is malformed.
var ErrBadSnapshot = errors.New("malformed snapshot")

type snapshotHeader struct {
	Format int    `json:"Format"`
	Index  uint64 `json:"Index"`
}

type allocJobRecord struct {
	Ref int      `json:"Ref"`
	Job *api.Job `json:"Job"`
}

// usageRecord carries one row of one of the ledger's tables.
type usageRecord struct {
	Bucket *state.UsageBucket `json:"Bucket,omitempty"`
	Open   *state.UsageOpen   `json:"Open,omitempty"`
	Total  *state.UsageTotal  `json:"Total,omitempty"`
}

type allocRecord struct {
	JobRef int             `json:"JobRef,omitempty"` // 0: no job
	Alloc  *api.Allocation `json:"Alloc"`
}

var tableRecords = map[string]recordType{
	state.TableJobs: recJob, state.TableJobVersions: recJobVersion, state.TableJobSummary: recJobSummary,
	state.TableNodes: recNode, state.TableEvals: recEval, state.TableDeployments: recDeployment,
	state.TableIndex: recIndex, state.TableSchedulerConfig: recSchedulerConfig, state.TableNodePools: recNodePool, state.TableNamespaces: recNamespace,
	state.TableQueues: recQueue, state.TableServices: recService, state.TableRootKeys: recRootKey,
	state.TableACLPolicies: recACLPolicy, state.TableACLRoles: recACLRole, state.TableACLTokens: recACLToken,
	state.TableACLAuthMethods: recACLAuthMethod, state.TableACLBindingRules: recACLBindingRule,
	state.TableVariables: recVariable,
}

// Snapshot captures the current state (O(1)); Persist writes it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap}, nil
}

type fsmSnapshot struct {
	snap *state.Snapshot
}

// Persist writes the record stream to sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release does nothing: the memdb snapshot is garbage collected.
func (s *fsmSnapshot) Release() {}

// WriteTo writes the snapshot's record stream (what Persist writes).
func (s *fsmSnapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := recordWriter{w: bw}
	if err := enc.put(recHeader, snapshotHeader{Format: snapshotFormat, Index: s.snap.LatestIndex()}); err != nil {
		return err
	}
	jobRefs := map[*api.Job]int{}
	err := s.snap.Persist(func(table string, obj any) error {
		switch table {
		case state.TableUsage:
			return enc.put(recUsage, usageRecord{Bucket: obj.(*state.UsageBucket)})
		case state.TableUsageOpen:
			return enc.put(recUsage, usageRecord{Open: obj.(*state.UsageOpen)})
		case state.TableUsageTotals:
			return enc.put(recUsage, usageRecord{Total: obj.(*state.UsageTotal)})
		case state.TableAllocs:
		default:
			return enc.put(tableRecords[table], obj)
		}
		a := obj.(*api.Allocation)
		rec := allocRecord{}
		if a.Job != nil {
			ref, ok := jobRefs[a.Job]
			if !ok {
				ref = len(jobRefs) + 1
				jobRefs[a.Job] = ref
				if err := enc.put(recAllocJob, allocJobRecord{Ref: ref, Job: a.Job}); err != nil {
					return err
				}
			}
			rec.JobRef = ref
			c := *a
			c.Job = nil
			a = &c
		}
		rec.Alloc = a
		return enc.put(recAlloc, rec)
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

type recordWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

// put writes one record: type byte, 4-byte big-endian length, JSON.
func (r *recordWriter) put(t recordType, v any) error {
	r.buf.Reset()
	r.buf.Write([]byte{byte(t), 0, 0, 0, 0})
	if err := json.NewEncoder(&r.buf).Encode(v); err != nil {
		return fmt.Errorf("encode record %d: %w", t, err)
	}
	b := r.buf.Bytes()
	binary.BigEndian.PutUint32(b[1:5], uint32(len(b)-5))
	_, err := r.w.Write(b)
	return err
}

// Restore replaces the state with the snapshot in rc: it is loaded into a
// new store first, which is swapped in only when the whole stream was read
// without error; then the old store is abandoned (waking blocked queries).
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	old := f.State()
	ns := state.NewStateStoreWithEvents(old.Events())
	if err := restoreInto(ns, rc); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	f.state = ns
	h := f.hooks
	f.mu.Unlock()
	old.Abandon()
	if rh, ok := h.(RestoreHook); ok {
		rh.StateRestored(ns)
	}
	return nil
}

func restoreInto(s *state.StateStore, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	res := s.Restore()
	committed := false
	defer func() {
		if !committed {
			res.Abort()
		}
	}()
	jobs := map[int]*api.Job{}
	var body bytes.Buffer
	for n := 0; ; n++ {
		var hdr [5]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				break
			}
			return fmt.Errorf("record %d header: %w: %w", n, ErrBadSnapshot, err)
		}
		t := recordType(hdr[0])
		size := binary.BigEndian.Uint32(hdr[1:])
		if size > maxRecordSize {
			return fmt.Errorf("record %d: size %d: %w", n, size, ErrBadSnapshot)
		}
		body.Reset()
		if _, err := io.CopyN(&body, br, int64(size)); err != nil {
			return fmt.Errorf("record %d body: %w: %w", n, ErrBadSnapshot, err)
		}
		if n == 0 && t != recHeader {
			return fmt.Errorf("record 0 is type %d, want a header: %w", t, ErrBadSnapshot)
		}
		if err := restoreRecord(res, t, body.Bytes(), jobs); err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
	}
	res.Commit()
	committed = true
	return nil
}

func decodeRecord[T any](b []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return v, nil
}

func restoreRecord(res *state.Restore, t recordType, b []byte, jobs map[int]*api.Job) error {
	switch t {
	case recHeader:
		h, err := decodeRecord[snapshotHeader](b)
		if err != nil {
			return err
		}
		if h.Format < 1 || h.Format > snapshotFormat {
			return fmt.Errorf("snapshot format %d: %w", h.Format, ErrBadSnapshot)
		}
		return nil
	case recJob:
		return restoreObj(b, res.Job)
	case recJobVersion:
		return restoreObj(b, res.JobVersion)
	case recJobSummary:
		return restoreObj(b, res.JobSummary)
	case recNode:
		return restoreObj(b, res.Node)
	case recEval:
		return restoreObj(b, res.Eval)
	case recDeployment:
		return restoreObj(b, res.Deployment)
	case recIndex:
		return restoreObj(b, res.Index)
	case recSchedulerConfig:
		return restoreObj(b, res.SchedulerConfig)
	case recNodePool:
		return restoreObj(b, res.NodePool)
	case recNamespace:
		return restoreObj(b, res.Namespace)
	case recQueue:
		return restoreObj(b, res.Queue)
	case recService:
		return restoreObj(b, res.Service)
	case recRootKey:
		return restoreObj(b, res.RootKey)
	case recACLPolicy:
		return restoreObj(b, res.ACLPolicy)
	case recACLRole:
		return restoreObj(b, res.ACLRole)
	case recACLToken:
		return restoreObj(b, res.ACLToken)
	case recACLAuthMethod:
		return restoreObj(b, res.ACLAuthMethod)
	case recACLBindingRule:
		return restoreObj(b, res.ACLBindingRule)
	case recVariable:
		return restoreObj(b, res.Variable)
	case recUsage:
		r, err := decodeRecord[usageRecord](b)
		if err != nil {
			return err
		}
		switch {
		case r.Bucket != nil:
			return res.UsageBucket(r.Bucket)
		case r.Open != nil:
			return res.UsageOpen(r.Open)
		case r.Total != nil:
			return res.UsageTotal(r.Total)
		}
		return fmt.Errorf("usage record without a row: %w", ErrBadSnapshot)
	case recAllocJob:
		r, err := decodeRecord[allocJobRecord](b)
		if err != nil {
			return err
		}
		if r.Job == nil || r.Ref <= 0 {
			return fmt.Errorf("alloc job record without job: %w", ErrBadSnapshot)
		}
		jobs[r.Ref] = r.Job
		return nil
	case recAlloc:
		r, err := decodeRecord[allocRecord](b)
		if err != nil {
			return err
		}
		if r.Alloc == nil {
			return fmt.Errorf("alloc record without alloc: %w", ErrBadSnapshot)
		}
		if r.JobRef != 0 {
			j, ok := jobs[r.JobRef]
			if !ok {
				return fmt.Errorf("alloc %q: unknown job ref %d: %w", r.Alloc.ID, r.JobRef, ErrBadSnapshot)
			}
			r.Alloc.Job = j
		}
		return res.Alloc(r.Alloc)
	}
	return fmt.Errorf("type %d: %w", t, ErrUnknownRecord)
}

func restoreObj[T any](b []byte, put func(*T) error) error {
	v, err := decodeRecord[T](b)
	if err != nil {
		return err
	}
	return put(v)
}
