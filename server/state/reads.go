package state

import (
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// reads holds the read methods shared by StateStore (latest) and Snapshot
// (point in time). Every method takes a WatchSet (may be nil); the channels
// it adds fire when what was read changes, or when the store is abandoned.
type reads struct {
	db      *memdb.MemDB
	abandon <-chan struct{}
}

// AllNamespaces in a list read means every namespace; "" means the same.
const AllNamespaces = "*"

func normNS(ns string) string {
	if ns == "" {
		return api.DefaultNamespace
	}
	return ns
}

func allNS(ns string) bool { return ns == "" || ns == AllNamespaces }

func (r *reads) watch(ws memdb.WatchSet, ch <-chan struct{}) {
	if ws != nil {
		ws.Add(ch)
		ws.Add(r.abandon)
	}
}

func first[T any](r *reads, ws memdb.WatchSet, table, index string, args ...any) (*T, error) {
	txn := r.db.Txn(false)
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return nil, err
	}
	r.watch(ws, ch)
	if raw == nil {
		return nil, nil
	}
	return raw.(*T), nil
}

func list[T any](r *reads, ws memdb.WatchSet, keep func(*T) bool, table, index string, args ...any) ([]*T, error) {
	txn := r.db.Txn(false)
	it, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, err
	}
	r.watch(ws, it.WatchCh())
	var out []*T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		v := raw.(*T)
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// JobByID returns the job or nil, nil when it does not exist.
func (r *reads) JobByID(ws memdb.WatchSet, ns, id string) (*api.Job, error) {
	return first[api.Job](r, ws, TableJobs, "id", normNS(ns), id)
}

// Jobs lists jobs whose ID starts with prefix, ordered by namespace and ID.
// ns "" or "*" lists every namespace.
func (r *reads) Jobs(ws memdb.WatchSet, ns, prefix string) ([]*api.Job, error) {
	if allNS(ns) {
		return list(r, ws, func(j *api.Job) bool { return strings.HasPrefix(j.ID, prefix) }, TableJobs, "id")
	}
	return list[api.Job](r, ws, nil, TableJobs, "id_prefix", ns, prefix)
}

// JobVersionsByID returns the kept versions of a job, newest first.
func (r *reads) JobVersionsByID(ws memdb.WatchSet, ns, id string) ([]*api.Job, error) {
	out, err := list[api.Job](r, ws, nil, TableJobVersions, "job", normNS(ns), id)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, nil
}

// JobVersionByID returns one kept version of a job or nil.
func (r *reads) JobVersionByID(ws memdb.WatchSet, ns, id string, version uint64) (*api.Job, error) {
	return first[api.Job](r, ws, TableJobVersions, "id", normNS(ns), id, version)
}

// JobSummaryByID returns the job's summary or nil.
func (r *reads) JobSummaryByID(ws memdb.WatchSet, ns, id string) (*api.JobSummary, error) {
	return first[api.JobSummary](r, ws, TableJobSummary, "id", normNS(ns), id)
}

// NodeByID returns the node or nil.
func (r *reads) NodeByID(ws memdb.WatchSet, id string) (*api.Node, error) {
	return first[api.Node](r, ws, TableNodes, "id", id)
}

// NodeBySecretID returns the node holding the secret or nil.
func (r *reads) NodeBySecretID(ws memdb.WatchSet, secret string) (*api.Node, error) {
	if secret == "" {
		return nil, nil
	}
	return first[api.Node](r, ws, TableNodes, "secret_id", secret)
}

// Nodes lists nodes whose ID starts with prefix, ordered by ID.
func (r *reads) Nodes(ws memdb.WatchSet, prefix string) ([]*api.Node, error) {
	return list[api.Node](r, ws, nil, TableNodes, "id_prefix", prefix)
}

// DrainingNodes lists the nodes with a drain strategy (an index lookup).
func (r *reads) DrainingNodes(ws memdb.WatchSet) ([]*api.Node, error) {
	return list[api.Node](r, ws, nil, TableNodes, "draining", true)
}

// nodeDraining indexes the nodes that drain (the "draining" index).
func nodeDraining(raw any) (bool, error) {
	n, ok := raw.(*api.Node)
	return ok && n.DrainStrategy != nil, nil
}

// AllocByID returns the allocation or nil.
func (r *reads) AllocByID(ws memdb.WatchSet, id string) (*api.Allocation, error) {
	return first[api.Allocation](r, ws, TableAllocs, "id", id)
}

// AllocsByIDPrefix lists allocations whose ID starts with prefix in ns
// ("" or "*": every namespace).
// IDs of both key kinds (keys.go) may start with prefix: it reads the
// text keys' range and the UUID keys' range and merges them.
func (r *reads) AllocsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error) {
	keep := func(a *api.Allocation) bool {
		return (allNS(ns) || a.Namespace == ns) && strings.HasPrefix(a.ID, prefix) // an odd last digit
	}
	text, err := list(r, ws, keep, TableAllocs, "id_prefix", keyPrefix(stringKey([]byte{keyText}, prefix, false)))
	if err != nil {
		return nil, err
	}
	b, ok := uuidPrefix(prefix)
	if !ok {
		return text, nil
	}
	uuids, err := list(r, ws, keep, TableAllocs, "id_prefix", keyPrefix(append([]byte{keyUUID}, b...)))
	if err != nil || len(text) == 0 {
		return uuids, err
	}
	out := make([]*api.Allocation, 0, len(text)+len(uuids))
	for len(text) > 0 && len(uuids) > 0 {
		if text[0].ID < uuids[0].ID {
			out, text = append(out, text[0]), text[1:]
		} else {
			out, uuids = append(out, uuids[0]), uuids[1:]
		}
	}
	return append(append(out, text...), uuids...), nil
}

// Allocs is AllocsByIDPrefix (the list endpoint's name).
func (r *reads) Allocs(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error) {
	return r.AllocsByIDPrefix(ws, ns, prefix)
}

// AllocsByJob returns the job's allocations (an index lookup). Unless all is
// set, allocations of an earlier job with the same ID (a different
// CreateIndex, i.e. purged and re-registered) are left out.
func (r *reads) AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*api.Allocation, error) {
	var keep func(*api.Allocation) bool
	if !all {
		job, err := r.JobByID(ws, ns, jobID)
		if err != nil {
			return nil, err
		}
		if job != nil {
			keep = func(a *api.Allocation) bool { return a.Job == nil || a.Job.CreateIndex == job.CreateIndex }
		}
	}
	return list(r, ws, keep, TableAllocs, "job", normNS(ns), jobID)
}

// AllocsByNode returns every allocation on the node (an index lookup).
func (r *reads) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*api.Allocation, error) {
	return list[api.Allocation](r, ws, nil, TableAllocs, "node", nodeID)
}

// NodeAllocsVersion names the version of the node's allocs: the watch
// channel of their part of the node index, a new one whenever an alloc on
// the node is written or deleted (the radix tree copies the path to a
// changed leaf, each copy with its own channel). Equal versions, from
// this store or a snapshot of it, hold the same allocs.
func (r *reads) NodeAllocsVersion(nodeID string) (any, error) {
	return nodeAllocsVersion(r.db.Txn(false), nodeID)
}

func nodeAllocsVersion(txn *memdb.Txn, nodeID string) (any, error) {
	it, err := txn.Get(TableAllocs, "node", nodeID)
	if err != nil {
		return nil, err
	}
	return it.WatchCh(), nil
}

// NodeAllocsByID returns, in ids' order, each ID's alloc when it is on
// nodeID, else nil (no such alloc, or another node's). From nodeWalkMin
// IDs up it reads the node's allocs in one walk of the node index, where
// they sit together, instead of one lookup each in the whole table: at
// 1,000,000 allocs a lookup is ~6 µs of cache misses. A client's status
// reports and fetches are such batches.
func (r *reads) NodeAllocsByID(nodeID string, ids []string) ([]*api.Allocation, error) {
	out := make([]*api.Allocation, len(ids))
	if len(ids) < nodeWalkMin {
		for i, id := range ids {
			a, err := r.AllocByID(nil, id)
			if err != nil {
				return nil, err
			}
			if a != nil && a.NodeID == nodeID {
				out[i] = a
			}
		}
		return out, nil
	}
	list, err := r.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*api.Allocation, len(list))
	for _, a := range list {
		byID[a.ID] = a
	}
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// nodeWalkMin is the batch from which NodeAllocsByID walks the node.
const nodeWalkMin = 8

// AllocsByEval returns the allocations an evaluation created or updated:
// those of its job that carry its ID. Allocs have no eval index (an index
// costs every alloc write, on a path that writes each alloc at least
// twice, and this read is rare); an eval that no longer exists has none.
func (r *reads) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*api.Allocation, error) {
	e, err := r.EvalByID(ws, evalID)
	if err != nil || e == nil || e.JobID == "" {
		return nil, err
	}
	return list(r, ws, func(a *api.Allocation) bool { return a.EvalID == evalID }, TableAllocs, "job", normNS(e.Namespace), e.JobID)
}

// AllocsByDeployment returns the allocations of a deployment.
func (r *reads) AllocsByDeployment(ws memdb.WatchSet, deploymentID string) ([]*api.Allocation, error) {
	return list[api.Allocation](r, ws, nil, TableAllocs, "deployment", deploymentID)
}

// EvalByID returns the evaluation or nil.
func (r *reads) EvalByID(ws memdb.WatchSet, id string) (*api.Evaluation, error) {
	return first[api.Evaluation](r, ws, TableEvals, "id", id)
}

// EvalsByIDPrefix lists evaluations whose ID starts with prefix in ns
// ("" or "*": every namespace).
func (r *reads) EvalsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error) {
	var keep func(*api.Evaluation) bool
	if !allNS(ns) {
		keep = func(e *api.Evaluation) bool { return e.Namespace == ns }
	}
	return list(r, ws, keep, TableEvals, "id_prefix", prefix)
}

// Evals is EvalsByIDPrefix (the list endpoint's name).
func (r *reads) Evals(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error) {
	return r.EvalsByIDPrefix(ws, ns, prefix)
}

// EvalsByJob returns the job's evaluations (an index lookup).
func (r *reads) EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*api.Evaluation, error) {
	return list[api.Evaluation](r, ws, nil, TableEvals, "job", normNS(ns), jobID)
}

// DeploymentByID returns the deployment or nil.
func (r *reads) DeploymentByID(ws memdb.WatchSet, id string) (*api.Deployment, error) {
	return first[api.Deployment](r, ws, TableDeployments, "id", id)
}

// Deployments lists deployments whose ID starts with prefix in ns ("" or
// "*": every namespace).
func (r *reads) Deployments(ws memdb.WatchSet, ns, prefix string) ([]*api.Deployment, error) {
	var keep func(*api.Deployment) bool
	if !allNS(ns) {
		keep = func(d *api.Deployment) bool { return d.Namespace == ns }
	}
	return list(r, ws, keep, TableDeployments, "id_prefix", prefix)
}

// DeploymentsByJobID returns the job's deployments, newest first.
func (r *reads) DeploymentsByJobID(ws memdb.WatchSet, ns, jobID string) ([]*api.Deployment, error) {
	out, err := list[api.Deployment](r, ws, nil, TableDeployments, "job", normNS(ns), jobID)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex > out[j].CreateIndex })
	return out, nil
}

// LatestDeploymentByJobID returns the job's newest deployment or nil.
func (r *reads) LatestDeploymentByJobID(ws memdb.WatchSet, ns, jobID string) (*api.Deployment, error) {
	ds, err := r.DeploymentsByJobID(ws, ns, jobID)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return ds[0], nil
}

// Index returns the last Raft index that changed table (0 if never).
func (r *reads) Index(table string) uint64 {
	e, _ := first[IndexEntry](r, nil, TableIndex, "id", table)
	if e == nil {
		return 0
	}
	return e.Value
}

// IndexWatch is Index that also watches the table's index entry.
func (r *reads) IndexWatch(ws memdb.WatchSet, table string) uint64 {
	e, _ := first[IndexEntry](r, ws, TableIndex, "id", table)
	if e == nil {
		return 0
	}
	return e.Value
}

// LatestIndex returns the highest index of any table.
func (r *reads) LatestIndex() uint64 { return r.LatestIndexWatch(nil) }

// LatestIndexWatch is LatestIndex that also watches the index table.
func (r *reads) LatestIndexWatch(ws memdb.WatchSet) uint64 {
	entries, _ := list[IndexEntry](r, ws, nil, TableIndex, "id")
	var max uint64
	for _, e := range entries {
		if e.Value > max {
			max = e.Value
		}
	}
	return max
}

// Indexes returns every table's index entry (for persisting).
func (r *reads) Indexes() ([]*IndexEntry, error) {
	return list[IndexEntry](r, nil, nil, TableIndex, "id")
}
