package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Queue tables. TableQueues holds the applied queues (*api.Queue by
// name); the implicit "default" queue is not stored unless applied
// (Queues adds it). TableQueueUsage holds what each queue's non-terminal
// allocs hold (*QueueUsageRow by queue), kept by every alloc write in the
// same transaction and recomputed on restore (it is never persisted).
const (
	TableQueues     = "queues"
	TableQueueUsage = "queue_usage"
)

// QueueUsageRow is a row of TableQueueUsage: the resources held by the
// non-terminal allocs of jobs naming Queue (not its child queues), and
// how many they are.
type QueueUsageRow struct {
	Queue  string
	Usage  api.QueueResources
	Allocs int
}

// queueDelta is a transaction's change to one queue's usage row.
type queueDelta struct {
	usage  api.QueueResources
	allocs int
}

func queuesTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		TableQueues: {Name: TableQueues, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Name")},
		}},
		TableQueueUsage: {Name: TableQueueUsage, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Queue")},
		}},
	}
}

// implicitDefaultQueue is the "default" queue when none was applied.
func implicitDefaultQueue() *api.Queue {
	return &api.Queue{Name: api.DefaultQueue, Description: "jobs that name no queue"}
}

// Queues returns the queues whose name starts with prefix, sorted by
// name, the implicit "default" included when it was not applied.
func (r *reads) Queues(ws memdb.WatchSet, prefix string) ([]*api.Queue, error) {
	out, err := list[api.Queue](r, ws, nil, TableQueues, "id_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	if strings.HasPrefix(api.DefaultQueue, prefix) {
		found := false
		for _, q := range out {
			found = found || q.Name == api.DefaultQueue
		}
		if !found {
			out = append(out, implicitDefaultQueue())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// QueueByName returns the queue ("default" always exists) or nil, nil.
func (r *reads) QueueByName(ws memdb.WatchSet, name string) (*api.Queue, error) {
	q, err := first[api.Queue](r, ws, TableQueues, "id", name)
	if err != nil {
		return nil, fmt.Errorf("read queue %q: %w", name, err)
	}
	if q == nil && name == api.DefaultQueue {
		return implicitDefaultQueue(), nil
	}
	return q, nil
}

// QueueUsage returns what each queue's non-terminal allocs hold, by queue
// name (queues whose jobs have no non-terminal alloc are absent). It reads a table the
// alloc writes keep, never the allocs. Each queue counts only the allocs
// of jobs naming it, not those of its children. Shared: do not modify.
func (r *reads) QueueUsage(ws memdb.WatchSet) (map[string]*api.QueueResources, error) {
	rows, err := list[QueueUsageRow](r, ws, nil, TableQueueUsage, "id")
	if err != nil {
		return nil, fmt.Errorf("read queue usage: %w", err)
	}
	out := make(map[string]*api.QueueResources, len(rows))
	for _, row := range rows {
		out[row.Queue] = &row.Usage
	}
	return out, nil
}

// UpsertQueues stores queues at index (see Txn.UpsertQueues).
func (s *StateStore) UpsertQueues(index uint64, queues []*api.Queue) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertQueues(queues) })
}

// DeleteQueues removes queues at index (see Txn.DeleteQueues).
func (s *StateStore) DeleteQueues(index uint64, names []string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteQueues(names) })
}

// UpsertQueues creates or replaces queues, all or none, keeping the first
// CreateIndex. An unset Parent is the name's prefix. Each must be valid
// and the tree they make with the stored queues must hold (see
// checkQueueTree); a batch may hold a parent and its children in any
// order.
func (t *Txn) UpsertQueues(queues []*api.Queue) error {
	tree, err := t.queueTree()
	if err != nil {
		return err
	}
	for _, q := range queues {
		n := q.Copy()
		if n != nil && n.Parent == "" {
			n.Parent = api.ParentOf(n.Name)
		}
		if err := n.Validate(); err != nil {
			return err
		}
		n.CreateIndex, n.ModifyIndex = t.index, t.index
		if old := tree[n.Name]; old != nil && old.CreateIndex != 0 {
			n.CreateIndex = old.CreateIndex
		}
		tree[n.Name] = n
	}
	if err := checkQueueTree(tree); err != nil {
		return err
	}
	for _, q := range queues {
		if err := t.insert(TableQueues, tree[q.Name]); err != nil {
			return err
		}
	}
	return nil
}

// queueTree is every queue by name, the implicit default included.
func (t *Txn) queueTree() (map[string]*api.Queue, error) {
	stored, err := txnList[api.Queue](t, TableQueues, "id")
	if err != nil {
		return nil, err
	}
	tree := map[string]*api.Queue{api.DefaultQueue: implicitDefaultQueue()}
	for _, q := range stored {
		tree[q.Name] = q
	}
	return tree, nil
}

// DeleteQueues removes queues, all or none. "default", an unknown queue,
// one with child queues (not deleted with it) or with live jobs can't be
// deleted.
func (t *Txn) DeleteQueues(names []string) error {
	if len(names) == 0 {
		return nil
	}
	tree, err := t.queueTree()
	if err != nil {
		return err
	}
	del := map[string]*api.Queue{}
	for _, name := range names {
		if name == api.DefaultQueue {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q is built in and can't be deleted", name))
		}
		if tree[name] == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("queue %q not found", name))
		}
		del[name] = tree[name]
	}
	for name := range tree {
		if p := api.ParentOf(name); del[p] != nil && del[name] == nil {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q has the child queue %q: delete it first", p, name))
		}
	}
	jobs, err := txnList[api.Job](t, TableJobs, "id")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if q := api.JobQueue(j); del[q] != nil && !j.Stop && j.Status != api.JobStatusDead {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q has the live job %q: stop it first", q, j.ID))
		}
	}
	for _, q := range del {
		if err := t.delete(TableQueues, q); err != nil {
			return err
		}
	}
	return nil
}

// checkQueueTree checks the queue tree: every queue's parent exists, a
// child's guarantee is within its parent's and its siblings' guarantees
// sum within the parent's when the parent has one (per resource: GPUs,
// each model, CPU, memory; a model the parent does not list is bounded by
// its GPUs).
func checkQueueTree(tree map[string]*api.Queue) error {
	children := map[string][]*api.Queue{}
	names := make([]string, 0, len(tree))
	for name, q := range tree {
		names = append(names, name)
		p := api.ParentOf(name)
		if p == "" {
			continue
		}
		if tree[p] == nil {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q: parent queue %q does not exist", name, p))
		}
		children[p] = append(children[p], q)
	}
	sort.Strings(names)
	for _, name := range names {
		g := tree[name].Guaranteed
		kids := children[name]
		if g == nil || len(kids) == 0 {
			continue
		}
		sort.Slice(kids, func(i, j int) bool { return kids[i].Name < kids[j].Name })
		var sum api.QueueResources
		for _, k := range kids {
			if k.Guaranteed == nil {
				continue
			}
			if over := guaranteeOver(*k.Guaranteed, g); over != "" {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q: guaranteed %s is above its parent %q's", k.Name, over, name))
			}
			sum.Add(*k.Guaranteed, 1)
		}
		if over := guaranteeOver(sum, g); over != "" {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q: its children's guarantees sum to %s, above its own", name, over))
		}
	}
	return nil
}

// guaranteeOver names the first resource of r above the guarantee g ("" if none).
func guaranteeOver(r api.QueueResources, g *api.QueueResources) string {
	switch {
	case r.GPUs > g.GPUs:
		return fmt.Sprintf("gpu %s (of %s)", api.FormatGPUs(r.GPUs), api.FormatGPUs(g.GPUs))
	case r.CPU > g.CPU:
		return fmt.Sprintf("cpu %d MHz (of %d)", r.CPU, g.CPU)
	case r.MemoryMB > g.MemoryMB:
		return fmt.Sprintf("memory %d MB (of %d)", r.MemoryMB, g.MemoryMB)
	}
	models := make([]string, 0, len(r.GPUsByModel))
	for m := range r.GPUsByModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		bound, ok := g.GPUsByModel[m]
		if !ok {
			bound = g.GPUs
		}
		if r.GPUsByModel[m] > bound {
			return fmt.Sprintf("gpu %s %s (of %s)", m, api.FormatGPUs(r.GPUsByModel[m]), api.FormatGPUs(bound))
		}
	}
	return ""
}

// countQueue adds sign times what a (a non-terminal alloc; others count
// nothing) holds to its job's queue, for finish to write.
func (t *Txn) countQueue(a *api.Allocation, sign int) {
	if a == nil || a.TerminalStatus() {
		return
	}
	if t.queueDelta == nil {
		t.queueDelta = map[string]*queueDelta{}
	}
	q := api.JobQueue(a.Job)
	d := t.queueDelta[q]
	if d == nil {
		d = &queueDelta{}
		t.queueDelta[q] = d
	}
	d.usage.Add(a.QueueUsage(), sign)
	d.allocs += sign
}

// writeQueueUsage applies the transaction's queue usage changes.
func (t *Txn) writeQueueUsage() error {
	for q, d := range t.queueDelta {
		if d.usage.IsZero() && d.allocs == 0 {
			continue
		}
		old, err := txnFirst[QueueUsageRow](t, TableQueueUsage, "id", q)
		if err != nil {
			return err
		}
		row := &QueueUsageRow{Queue: q}
		if old != nil {
			row.Usage, row.Allocs = *old.Usage.Copy(), old.Allocs
		}
		row.Usage.Add(d.usage, 1)
		row.Allocs += d.allocs
		if row.Usage.IsZero() && row.Allocs == 0 {
			if old != nil {
				if err := t.delete(TableQueueUsage, old); err != nil {
					return err
				}
			}
			continue
		}
		if err := t.insert(TableQueueUsage, row); err != nil {
			return err
		}
	}
	return nil
}

// Queue restores a stored queue.
func (r *Restore) Queue(q *api.Queue) error { return r.put(TableQueues, q) }

// countQueue adds a restored non-terminal alloc to its queue's usage.
func (r *Restore) countQueue(a *api.Allocation) error {
	if a.TerminalStatus() {
		return nil
	}
	q := api.JobQueue(a.Job)
	row := &QueueUsageRow{Queue: q}
	raw, err := r.txn.First(TableQueueUsage, "id", q)
	if err != nil {
		return fmt.Errorf("restore queue usage: %w", err)
	}
	if raw != nil {
		old := raw.(*QueueUsageRow)
		row.Usage, row.Allocs = *old.Usage.Copy(), old.Allocs
	}
	row.Usage.Add(a.QueueUsage(), 1)
	row.Allocs++
	return r.put(TableQueueUsage, row)
}
