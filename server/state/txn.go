package state

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Txn is one write transaction stamped with a Raft index. Get one through
// StateStore.Write, which commits it (publishing its events) when the
// function returns nil and discards it otherwise. Its methods are the write
// methods of StateStore without the index, so the FSM can combine several
// (a job and its eval) atomically. A Txn must not escape the function.
type Txn struct {
	s      *StateStore
	txn    *memdb.Txn
	index  uint64
	tables map[string]struct{}
	events []api.Event

	summaries map[api.NamespacedID]*api.JobSummary // working copies
	jobs      map[api.NamespacedID]*jobTouch       // jobs whose status to recompute
	// queueDelta is the change of each queue's usage (TableQueueUsage).
	queueDelta map[string]*queueDelta
	// allocChanges are the allocs written, one entry per alloc
	// (allocChangeAt: its position).
	allocChanges  []AllocChange
	allocChangeAt map[string]int
	// nodeAllocs are the nodes whose TableNodeAllocIndex row moves.
	nodeAllocs map[string]struct{}
	// share holds what the allocs written so far share (share.go).
	share sharer
	// lossEvals are the jobs with an eval for allocs this transaction
	// lost to a down node; createdEvals the evals it created for them
	// (node_loss.go).
	lossEvals    map[api.NamespacedID]struct{}
	createdEvals []*api.Evaluation
	// base reads the state as it was before the transaction (see
	// allocByID); allocsDeleted: the transaction deleted an alloc.
	base          *memdb.Txn
	allocsDeleted bool
	// usageOpenW are the TableUsageOpen rows written (nil: deleted), by
	// alloc ID (usageOpen).
	usageOpenW map[string]*UsageOpen
}

// AllocChange is an alloc a transaction wrote: Before is the stored
// version before the transaction (nil for a new alloc), After the last
// version it wrote.
type AllocChange struct {
	Before, After *api.Allocation
}

// Freed reports whether the change released the alloc's resources on its
// node: it became terminal (desired stop or evict) or the client finished
// it.
func (c AllocChange) Freed() bool {
	if c.Before == nil || c.After == nil {
		return false
	}
	return (!c.Before.TerminalStatus() && c.After.TerminalStatus()) ||
		(!c.Before.ClientTerminalStatus() && c.After.ClientTerminalStatus())
}

// AllocChanges returns the allocs the transaction wrote so far, each once
// (as the FSM reports them to its hooks, without looking each one up
// before and after).
func (t *Txn) AllocChanges() []AllocChange { return t.allocChanges }

// recordAlloc notes that a replaced old (nil: none) in this transaction.
func (t *Txn) recordAlloc(old, a *api.Allocation) {
	if i, ok := t.allocChangeAt[a.ID]; ok {
		t.allocChanges[i].After = a // written before in this transaction: keep the first Before
		return
	}
	if t.allocChangeAt == nil {
		t.allocChangeAt = map[string]int{}
	}
	t.allocChangeAt[a.ID] = len(t.allocChanges)
	t.allocChanges = append(t.allocChanges, AllocChange{Before: old, After: a})
}

// allocByID returns the alloc as the transaction has it so far (nil:
// none): the version it wrote, else the one before it. It does not read
// the allocs table through the write transaction: memdb answers a read
// of an index the transaction modified from a clone of that index's radix
// transaction, and cloning drops the cache of nodes the transaction
// already copied, so the next write copies its whole path again (the
// 4 KB nodes of 256 edges included). Reading each updated alloc so made
// a 1,024-alloc client update copy ~14 MB. Until the transaction deletes
// an alloc (which recordAlloc does not see) it reads the state before
// the transaction instead.
func (t *Txn) allocByID(id string) (*api.Allocation, error) {
	if t.allocsDeleted {
		return txnFirst[api.Allocation](t, TableAllocs, "id", id)
	}
	if i, ok := t.allocChangeAt[id]; ok {
		return t.allocChanges[i].After, nil
	}
	raw, err := t.baseTxn().First(TableAllocs, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*api.Allocation), nil
}

// baseTxn reads the state before the transaction: the committed state,
// since this transaction is the only writer.
func (t *Txn) baseTxn() *memdb.Txn {
	if t.base == nil {
		t.base = t.s.db.Txn(false)
	}
	return t.base
}

type jobTouch struct {
	running    bool // a non-terminal alloc of the job was written
	evalDelete bool
}

// Index is the Raft index of the transaction.
func (t *Txn) Index() uint64 { return t.index }

// Write runs fn in one write transaction at index: all or nothing. Each
// changed table's index is set to index, watchers fire and the events are
// published when fn returns nil.
func (s *StateStore) Write(index uint64, fn func(*Txn) error) error {
	t := &Txn{s: s, txn: s.db.Txn(true), index: index, tables: map[string]struct{}{}, share: sharer{nodes: s.nodes}}
	defer t.txn.Abort()
	if err := fn(t); err != nil {
		return err
	}
	if err := t.finish(); err != nil {
		return err
	}
	t.txn.Commit()
	s.events.Publish(index, t.events)
	return nil
}

func (t *Txn) touch(table string) { t.tables[table] = struct{}{} }

func (t *Txn) insert(table string, obj any) error {
	if err := t.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	t.touch(table)
	return nil
}

func (t *Txn) delete(table string, obj any) error {
	if err := t.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("delete from %s: %w", table, err)
	}
	t.touch(table)
	return nil
}

func (t *Txn) emit(e api.Event) { t.events = append(t.events, e) }

func txnFirst[T any](t *Txn, table, index string, args ...any) (*T, error) {
	raw, err := t.txn.First(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*T), nil
}

func txnList[T any](t *Txn, table, index string, args ...any) ([]*T, error) {
	it, err := t.txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	var out []*T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*T))
	}
	return out, nil
}

// touchJob marks a job for a status recompute at the end of the txn.
func (t *Txn) touchJob(ns, id string) *jobTouch {
	if t.jobs == nil {
		t.jobs = map[api.NamespacedID]*jobTouch{}
	}
	k := api.NamespacedID{Namespace: ns, ID: id}
	j := t.jobs[k]
	if j == nil {
		j = &jobTouch{}
		t.jobs[k] = j
	}
	return j
}

// finish writes summaries and job statuses and the index table.
func (t *Txn) finish() error {
	for k, touch := range t.jobs { // first: may change parents' summaries
		if err := t.refreshJobStatus(k, touch); err != nil {
			return err
		}
	}
	for _, sum := range t.summaries {
		sum.ModifyIndex = t.index
		if err := t.insert(TableJobSummary, sum); err != nil {
			return err
		}
	}
	if err := t.writeQueueUsage(); err != nil {
		return err
	}
	if err := t.writeNodeAllocIndexes(); err != nil {
		return err
	}
	for table := range t.tables {
		if err := t.txn.Insert(TableIndex, &IndexEntry{Key: table, Value: t.index}); err != nil {
			return fmt.Errorf("update index of %s: %w", table, err)
		}
	}
	return nil
}

// refreshJobStatus recomputes a job's status; a change is written on a copy.
func (t *Txn) refreshJobStatus(k api.NamespacedID, touch *jobTouch) error {
	job, err := txnFirst[api.Job](t, TableJobs, "id", k.Namespace, k.ID)
	if err != nil || job == nil {
		return err
	}
	status, err := t.jobStatus(job, touch)
	if err != nil || status == job.Status {
		return err
	}
	if err := t.childStatus(job, job.Status, status); err != nil {
		return err
	}
	c := *job
	c.Status = status
	c.ModifyIndex = t.index
	return t.insert(TableJobs, &c)
}

// jobStatus: templates and system jobs run until stopped; other jobs run
// while any alloc is non-terminal, are pending while an eval is, and are
// dead once everything they had is terminal (or they are stopped).
func (t *Txn) jobStatus(job *api.Job, touch *jobTouch) (string, error) {
	if job.IsPeriodic() || job.IsParameterized() || job.Type == api.JobTypeSystem {
		if job.Stop {
			return api.JobStatusDead, nil
		}
		return api.JobStatusRunning, nil
	}
	if touch != nil && touch.running {
		return api.JobStatusRunning, nil
	}
	allocs, err := txnList[api.Allocation](t, TableAllocs, "job", job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	for _, a := range allocs {
		if !a.TerminalStatus() {
			return api.JobStatusRunning, nil
		}
	}
	evals, err := txnList[api.Evaluation](t, TableEvals, "job", job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	for _, e := range evals {
		if !e.TerminalStatus() {
			return api.JobStatusPending, nil
		}
	}
	if job.Stop || len(allocs) > 0 || len(evals) > 0 || (touch != nil && touch.evalDelete) {
		return api.JobStatusDead, nil
	}
	return api.JobStatusPending, nil
}
