package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"
)

// TableRootKeys holds the servers' signing keys (*RootKey by KeyID).
const TableRootKeys = "root_keys"

// RootKey is a signing key of the keyring: workload identities are
// signed with the active one; every key stays in the JWKS so tokens
// signed before a rotation still verify. The private key is stored in
// Raft (and snapshots) as PKCS#8 PEM.
type RootKey struct {
	KeyID      string `json:"KeyID"`
	Algorithm  string `json:"Algorithm"` // RS256
	PrivateKey string `json:"PrivateKey"`
	Active     bool   `json:"Active"`
	CreateTime int64  `json:"CreateTime"`

	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

func rootKeysTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableRootKeys, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: str("KeyID")},
	}}
}

// RootKeys returns every key, oldest first.
func (r *reads) RootKeys(ws memdb.WatchSet) ([]*RootKey, error) {
	keys, err := list[RootKey](r, ws, nil, TableRootKeys, "id")
	if err != nil {
		return nil, fmt.Errorf("read root keys: %w", err)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].CreateIndex < keys[j].CreateIndex })
	return keys, nil
}

// ActiveRootKey returns the key identities are signed with, or nil.
func (r *reads) ActiveRootKey() (*RootKey, error) {
	keys, err := r.RootKeys(nil)
	if err != nil {
		return nil, err
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i].Active {
			return keys[i], nil
		}
	}
	return nil, nil
}

// UpsertRootKey stores a key at index; an active one makes the others
// inactive.
func (s *StateStore) UpsertRootKey(index uint64, k *RootKey) error {
	return s.Write(index, func(t *Txn) error {
		if k == nil || k.KeyID == "" || k.PrivateKey == "" {
			return fmt.Errorf("root key without an ID or key material")
		}
		old, err := txnFirst[RootKey](t, TableRootKeys, "id", k.KeyID)
		if err != nil {
			return err
		}
		c := *k
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex = old.CreateIndex
		}
		if c.Active {
			keys, err := txnList[RootKey](t, TableRootKeys, "id")
			if err != nil {
				return err
			}
			for _, o := range keys {
				if o.Active && o.KeyID != c.KeyID {
					d := *o
					d.Active, d.ModifyIndex = false, t.index
					if err := t.insert(TableRootKeys, &d); err != nil {
						return err
					}
				}
			}
		}
		return t.insert(TableRootKeys, &c)
	})
}

// RootKey restores a stored key.
func (r *Restore) RootKey(k *RootKey) error { return r.put(TableRootKeys, k) }
