package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// swapStore is one state store of swapSource: a single job at index idx.
// Only the reads below are called.
type swapStore struct {
	Store
	job       *api.Job
	idx       uint64
	changed   chan struct{} // never fires: nothing writes to this store
	abandoned chan struct{}
}

func newSwapStore(version, idx uint64) *swapStore {
	return &swapStore{job: &api.Job{ID: "web", Namespace: api.DefaultNamespace, Version: version, ModifyIndex: idx},
		idx: idx, changed: make(chan struct{}), abandoned: make(chan struct{})}
}

func (s *swapStore) JobByID(ws memdb.WatchSet, ns, id string) (*api.Job, error) {
	if ws != nil {
		ws.Add(s.changed)
	}
	return s.job, nil
}

func (s *swapStore) Index(string) uint64 { return s.idx }

func (s *swapStore) NodeAllocsByID(string, []string) ([]*api.Allocation, error) { return nil, nil }

// WaitIndex waits as the real store does: done when the index is
// applied, failing when the store is abandoned.
func (s *swapStore) WaitIndex(ctx context.Context, index uint64) error {
	if s.idx >= index {
		return nil
	}
	select {
	case <-s.abandoned:
		return errors.New("state store abandoned")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// swapSource is a server whose store a snapshot restore replaces
// (restore); reads says a read asked for the current store.
type swapSource struct {
	mu    sync.Mutex
	cur   *swapStore
	reads chan struct{}
}

func (s *swapSource) CurrentState() (Store, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.reads <- struct{}{}:
	default:
	}
	return s.cur, s.cur.abandoned
}

// restore replaces the store with next and abandons the old one.
func (s *swapSource) restore(next *swapStore) {
	s.mu.Lock()
	old := s.cur
	s.cur = next
	s.mu.Unlock()
	close(old.abandoned)
}

// nodesOK is a node backend that is never called (a fetch only reads).
type nodesOK struct{ NodesBackend }

// A blocking query parked on a store that a snapshot restore replaces
// wakes up and answers from the new store: reads watch the current
// store's abandon channel (StateSource). Without it the query would wait
// on the old store's channels, which never fire again.
func TestBlockingQueryFollowsRestoredStore(t *testing.T) {
	src := &swapSource{cur: newSwapStore(1, 5), reads: make(chan struct{}, 1)}
	s, err := New(Config{Server: &ServerRole{State: src}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/job/web?index=5&wait=5m", nil))
		done <- w
	}()
	<-src.reads // the query read the first store
	src.restore(newSwapStore(2, 7))
	select {
	case w := <-done:
		var j api.Job
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &j) != nil || j.Version != 2 {
			t.Fatalf("blocking query after a restore = %d %s, want version 2 of the restored store", w.Code, w.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not wake when its store was replaced")
	}
}

// A fetch waiting for its MinIndex on a store that a restore replaces
// waits on the new store instead of failing.
func TestFetchIndexWaitFollowsRestoredStore(t *testing.T) {
	src := &swapSource{cur: newSwapStore(1, 5), reads: make(chan struct{}, 1)}
	s, err := New(Config{Server: &ServerRole{State: src, Nodes: nodesOK{}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		body := strings.NewReader(`{"AllocIDs":[],"MinIndex":9}`)
		s.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/node/n1/allocations/fetch", body))
		done <- w
	}()
	<-src.reads // the fetch waits on the first store
	src.restore(newSwapStore(2, 9))
	select {
	case w := <-done:
		if w.Code != 200 {
			t.Fatalf("fetch after a restore = %d %s, want 200 once the new store has index 9", w.Code, w.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch did not go on when its store was replaced")
	}
}
