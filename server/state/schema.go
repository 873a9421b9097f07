package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// Table names. The ones Index accepts are TableJobs, TableNodes,
// TableAllocs, TableEvals and TableDeployments (and the two job side tables).
const (
	TableJobs        = "jobs"
	TableJobVersions = "job_versions"
	TableJobSummary  = "job_summary"
	TableNodes       = "nodes"
	TableAllocs      = "allocs"
	TableEvals       = "evals"
	TableDeployments = "deployments"
	TableIndex       = "index"
)

// IndexEntry is a row of the index table: the last Raft index that changed
// a table.
type IndexEntry struct {
	Key   string
	Value uint64
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func nsKey(field string) memdb.Indexer {
	return &memdb.CompoundIndex{Indexes: []memdb.Indexer{str("Namespace"), str(field)}}
}

func schema() *memdb.DBSchema {
	s := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableJobs: {Name: TableJobs, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: nsKey("ID")},
		}},
		TableJobVersions: {Name: TableJobVersions, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				str("Namespace"), str("ID"), &memdb.UintFieldIndex{Field: "Version"}}}},
			"job": {Name: "job", Indexer: nsKey("ID")},
		}},
		TableJobSummary: {Name: TableJobSummary, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: nsKey("JobID")},
		}},
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id":        {Name: "id", Unique: true, Indexer: str("ID")},
			"secret_id": {Name: "secret_id", Unique: true, AllowMissing: true, Indexer: str("SecretID")},
			// draining: nodes with a drain strategy (true), what the
			// drainer walks instead of every node.
			"draining": {Name: "draining", Indexer: &memdb.ConditionalIndex{Conditional: nodeDraining}},
		}},
		TableAllocs: {Name: TableAllocs, Indexes: map[string]*memdb.IndexSchema{
			// Typed (keys.go): the hottest table's writes.
			"id":         {Name: "id", Unique: true, Indexer: allocString{get: func(a *api.Allocation) string { return a.ID }}},
			"job":        {Name: "job", Indexer: allocJob{}},
			"node":       {Name: "node", AllowMissing: true, Indexer: allocString{get: func(a *api.Allocation) string { return a.NodeID }, room: idRoom}},
			"deployment": {Name: "deployment", AllowMissing: true, Indexer: allocString{get: func(a *api.Allocation) string { return a.DeploymentID }, room: idRoom}},
		}},
		TableEvals: {Name: TableEvals, Indexes: map[string]*memdb.IndexSchema{
			"id":  {Name: "id", Unique: true, Indexer: str("ID")},
			"job": {Name: "job", AllowMissing: true, Indexer: nsKey("JobID")},
			// reservation: blocked evals holding a reservation (true).
			"reservation": {Name: "reservation", Indexer: &memdb.ConditionalIndex{Conditional: holdsReservation}},
		}},
		TableDeployments: {Name: TableDeployments, Indexes: map[string]*memdb.IndexSchema{
			"id":  {Name: "id", Unique: true, Indexer: str("ID")},
			"job": {Name: "job", Indexer: nsKey("JobID")},
		}},
		TableIndex: {Name: TableIndex, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Key")},
		}},
		TableSchedulerConfig: schedulerConfigTable(),
		TableNodePools:       nodePoolsTable(),
		TableNamespaces:      namespacesTable(),
		TableServices:        servicesTable(),
		TableRootKeys:        rootKeysTable(),
		TableVariables:       variablesTable(),
		TableNodeAllocIndex:  nodeAllocIndexTable(),
	}}
	for name, t := range aclTables() {
		s.Tables[name] = t
	}
	for name, t := range queuesTables() {
		s.Tables[name] = t
	}
	return s
}

func newDB() *memdb.MemDB {
	sc := schema()
	for name, t := range usageTables() {
		sc.Tables[name] = t
	}
	db, err := memdb.NewMemDB(sc)
	if err != nil {
		panic(fmt.Sprintf("state: invalid schema: %v", err)) // a programming error
	}
	return db
}
