package state

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// TableSchedulerConfig holds at most one row: the cluster's
// *api.SchedulerConfiguration (absent until an operator sets one; readers
// then use api.DefaultSchedulerConfiguration).
const TableSchedulerConfig = "scheduler_config"

// schedulerConfigTable is a singleton: every row has the same key.
func schedulerConfigTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableSchedulerConfig, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: &memdb.ConditionalIndex{
			Conditional: func(any) (bool, error) { return true, nil }}},
	}}
}

// SchedulerConfig returns the stored scheduler configuration, or nil, nil
// when none was ever set.
func (r *reads) SchedulerConfig(ws memdb.WatchSet) (*api.SchedulerConfiguration, error) {
	return first[api.SchedulerConfiguration](r, ws, TableSchedulerConfig, "id")
}

// SetSchedulerConfig stores the scheduler configuration at index (see
// Txn.SetSchedulerConfig).
func (s *StateStore) SetSchedulerConfig(index uint64, c *api.SchedulerConfiguration, cas bool, casIndex uint64) error {
	return s.Write(index, func(t *Txn) error { return t.SetSchedulerConfig(c, cas, casIndex) })
}

// SetSchedulerConfig replaces the scheduler configuration, keeping the
// first CreateIndex and setting ModifyIndex to the transaction's index.
// With cas, it writes only when the stored ModifyIndex (0 when none is
// stored) equals casIndex, and otherwise fails with an error wrapping
// api.ErrIndexConflict, changing nothing.
func (t *Txn) SetSchedulerConfig(c *api.SchedulerConfiguration, cas bool, casIndex uint64) error {
	if c == nil {
		return fmt.Errorf("scheduler configuration: %w", api.ErrBadRequest)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	old, err := txnFirst[api.SchedulerConfiguration](t, TableSchedulerConfig, "id")
	if err != nil {
		return err
	}
	var have uint64
	if old != nil {
		have = old.ModifyIndex
	}
	if cas && have != casIndex {
		return fmt.Errorf("scheduler configuration is at index %d, not %d: %w", have, casIndex, api.ErrIndexConflict)
	}
	n := c.Copy()
	n.CreateIndex, n.ModifyIndex = t.index, t.index
	if old != nil {
		n.CreateIndex = old.CreateIndex
	}
	if n.SchedulerAlgorithm == "" {
		n.SchedulerAlgorithm = api.SchedulerAlgorithmBinpack
	}
	return t.insert(TableSchedulerConfig, n)
}

// SchedulerConfig restores the scheduler configuration.
func (r *Restore) SchedulerConfig(c *api.SchedulerConfiguration) error {
	return r.put(TableSchedulerConfig, c)
}
