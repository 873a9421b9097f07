package clientstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

var (
	bucketMeta   = []byte("meta")
	bucketAllocs = []byte("allocs")
	bucketTasks  = []byte("tasks") // allocID -> nested bucket task -> TaskRecord
	keyIdentity  = []byte("identity")
	keyNodeMeta  = []byte("node_meta") // dynamic node metadata (drover node meta apply)
)

// ErrNotFound is returned when a record is absent.
var ErrNotFound = errors.New("client state: not found")

// Identity is the node's persisted identity.
type Identity struct {
	NodeID   string `json:"NodeID"`
	SecretID string `json:"SecretID"`
}

// TaskRecord is what a task runner persists.
type TaskRecord struct {
	State *api.TaskState `json:"State"`
	// Handle of the running task; nil when none is running.
	Handle *drivers.TaskHandle `json:"Handle,omitempty"`
	// RestartWindowStart and RestartCount feed the restart policy.
	RestartWindowStart time.Time `json:"RestartWindowStart"`
	RestartCount       int       `json:"RestartCount"`
	// RestartAt is when a delayed restart is due (zero: none waits), so
	// a restored runner finishes the delay instead of starting at once.
	RestartAt time.Time `json:"RestartAt,omitzero"`
}

// DB is the client's state file.
type DB struct {
	b *bolt.DB
}

// Open opens (creating) dataDir/state.db, the client's data dir being
// <agent data dir>/client. A state file at the old place,
// dataDir/client/state.db, is moved there first when the new one does not
// exist yet, so an existing data dir keeps its node identity and tasks.
func Open(dataDir string) (*DB, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("client state dir: %w", err)
	}
	path := filepath.Join(dataDir, "state.db")
	if err := migrateLegacy(dataDir, path); err != nil {
		return nil, err
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open client state: %w", err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		for _, n := range [][]byte{bucketMeta, bucketAllocs, bucketTasks} {
			if _, err := tx.CreateBucketIfNotExists(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("init client state: %w", err)
	}
	return &DB{b: b}, nil
}

// Close closes the file.
func (d *DB) Close() error { return d.b.Close() }

// Identity returns the stored node identity or ErrNotFound.
func (d *DB) Identity() (*Identity, error) {
	var id Identity
	err := d.b.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyIdentity)
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &id)
	})
	if err != nil {
		return nil, fmt.Errorf("read node identity: %w", err)
	}
	return &id, nil
}

// PutIdentity stores the node identity. It is written alone, at start
// up, so it does not wait to be batched (Batch waits up to 10 ms for
// company).
func (d *DB) PutIdentity(id *Identity) error {
	b, err := json.Marshal(id)
	if err != nil {
		return fmt.Errorf("encode identity: %w", err)
	}
	return d.b.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyIdentity, b) })
}

// NodeMeta returns the dynamic node metadata (a nil value hides the
// static key of that name); an empty map when none was applied.
func (d *DB) NodeMeta() (map[string]*string, error) {
	m := map[string]*string{}
	err := d.b.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyNodeMeta); v != nil {
			return json.Unmarshal(v, &m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read node metadata: %w", err)
	}
	return m, nil
}

// PutNodeMeta stores the dynamic node metadata (synced to disk before it
// returns, so an acknowledged change survives a restart).
func (d *DB) PutNodeMeta(m map[string]*string) error {
	return d.put(bucketMeta, keyNodeMeta, m)
}

func (d *DB) put(bucket, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", bucket, key, err)
	}
	// Batch coalesces concurrent writers (many task runners) into one
	// transaction and one fsync; the function is idempotent as Batch needs.
	return d.b.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, b) })
}

// PutAlloc stores an allocation as received.
func (d *DB) PutAlloc(a *api.Allocation) error {
	return d.put(bucketAllocs, []byte(a.ID), a)
}

// Allocs returns every stored allocation. A record that cannot be decoded
// is reported as an error (never silently dropped).
func (d *DB) Allocs() ([]*api.Allocation, error) {
	var out []*api.Allocation
	err := d.b.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAllocs).ForEach(func(k, v []byte) error {
			var a api.Allocation
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("decode alloc %s: %w", k, err)
			}
			out = append(out, &a)
			return nil
		})
	})
	return out, err
}

// DeleteAlloc removes an allocation and its task records.
func (d *DB) DeleteAlloc(id string) error {
	return d.b.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketAllocs).Delete([]byte(id)); err != nil {
			return err
		}
		tb := tx.Bucket(bucketTasks)
		if tb.Bucket([]byte(id)) != nil {
			return tb.DeleteBucket([]byte(id))
		}
		return nil
	})
}

// PutTask stores a task runner's record.
func (d *DB) PutTask(allocID, task string, r *TaskRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode task %s/%s: %w", allocID, task, err)
	}
	return d.b.Batch(func(tx *bolt.Tx) error {
		ab, err := tx.Bucket(bucketTasks).CreateBucketIfNotExists([]byte(allocID))
		if err != nil {
			return err
		}
		return ab.Put([]byte(task), b)
	})
}

// Task returns a task's record or ErrNotFound.
func (d *DB) Task(allocID, task string) (*TaskRecord, error) {
	var r TaskRecord
	err := d.b.View(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketTasks).Bucket([]byte(allocID))
		if ab == nil {
			return ErrNotFound
		}
		v := ab.Get([]byte(task))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &r)
	})
	if err != nil {
		return nil, fmt.Errorf("read task %s/%s: %w", allocID, task, err)
	}
	return &r, nil
}

// migrateLegacy moves dataDir/client/state.db (where releases before the
// fix put it) to path when path does not exist; it removes the then empty
// legacy dir.
func migrateLegacy(dataDir, path string) error {
	legacyDir := filepath.Join(dataDir, "client")
	legacy := filepath.Join(legacyDir, "state.db")
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // the new file exists (or cannot be checked: bolt.Open will say)
	}
	if _, err := os.Stat(legacy); err != nil {
		return nil
	}
	if err := os.Rename(legacy, path); err != nil {
		return fmt.Errorf("move client state %s to %s: %w", legacy, path, err)
	}
	_ = os.Remove(legacyDir) // only succeeds when empty
	return nil
}
