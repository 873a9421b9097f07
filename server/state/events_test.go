package state

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

func next(t *testing.T, sub *Subscription) api.Events {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return ev
}

type evKey struct {
	Index            uint64
	Topic, Type, Key string
}

func keys(evs api.Events) []evKey {
	var out []evKey
	for _, e := range evs.Events {
		out = append(out, evKey{e.Index, e.Topic, e.Type, e.Key})
	}
	return out
}

func TestEventsPublishedPerWrite(t *testing.T) {
	s := NewStateStore()
	sub, err := s.Events().Subscribe(context.Background(), nil, 0)
	must(t, err)
	defer sub.Close()

	must(t, s.Write(1, func(tx *Txn) error {
		if err := tx.UpsertJob(testJob("web")); err != nil {
			return err
		}
		return tx.UpsertEvals([]*api.Evaluation{testEval("e1", "web")})
	}))
	must(t, s.UpsertNode(2, testNode("n1")))
	must(t, s.UpsertAllocs(3, []*api.Allocation{testAlloc("a1", "web", "n1")}))

	want := [][]evKey{
		{{1, api.TopicJob, "JobRegistered", "web"}, {1, api.TopicEvaluation, "EvaluationUpdated", "e1"}},
		{{2, api.TopicNode, "NodeRegistration", "n1"}},
		{{3, api.TopicAllocation, "AllocationUpdated", "a1"}},
	}
	for i, w := range want {
		got := next(t, sub)
		if diff := cmp.Diff(w, keys(got)); diff != "" {
			t.Errorf("batch %d (-want +got):\n%s", i, diff)
		}
		if i == 1 {
			n := got.Events[0].Payload["Node"].(*api.Node)
			if n.SecretID != "" {
				t.Error("node event leaks the secret ID")
			}
		}
		if i == 2 {
			b, err := json.Marshal(got.Events[0].Payload["Allocation"])
			if err != nil {
				t.Fatal(err)
			}
			var a map[string]any
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			if a["ID"] != "a1" || a["Job"] != nil {
				t.Errorf("alloc event payload %s: want alloc a1 without its job", b)
			}
		}
	}
	// A failed write publishes nothing.
	if err := s.UpsertJob(4, &api.Job{}); err == nil {
		t.Fatal("want error")
	}
	must(t, s.UpsertJob(5, testJob("api")))
	if got := next(t, sub); got.Index != 5 {
		t.Errorf("after failed write: got index %d, want 5", got.Index)
	}
}

func TestEventFilters(t *testing.T) {
	s := NewStateStore()
	ctx := context.Background()
	byJob, err := s.Events().Subscribe(ctx, map[string][]string{api.TopicAllocation: {"web"}}, 0)
	must(t, err)
	jobs, err := s.Events().Subscribe(ctx, map[string][]string{api.TopicJob: nil}, 0)
	must(t, err)
	star, err := s.Events().Subscribe(ctx, map[string][]string{api.TopicAll: {"*"}}, 0)
	must(t, err)

	must(t, s.UpsertAllocs(1, []*api.Allocation{testAlloc("a1", "web", "n1"), testAlloc("b1", "api", "n1")}))
	must(t, s.UpsertJob(2, testJob("web")))

	if diff := cmp.Diff([]evKey{{1, api.TopicAllocation, "AllocationUpdated", "a1"}}, keys(next(t, byJob))); diff != "" {
		t.Errorf("alloc filter by job key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]evKey{{2, api.TopicJob, "JobRegistered", "web"}}, keys(next(t, jobs))); diff != "" {
		t.Errorf("job topic (-want +got):\n%s", diff)
	}
	if got := next(t, star); len(got.Events) != 2 || got.Index != 1 {
		t.Errorf("star: got %+v", keys(got))
	}
	if got := next(t, star); got.Index != 2 {
		t.Errorf("star second: got %d", got.Index)
	}
}

func TestEventReplayFromIndex(t *testing.T) {
	s := NewStateStore()
	for i := uint64(1); i <= 4; i++ {
		must(t, s.UpsertNode(i, testNode("n1")))
	}
	sub, err := s.Events().Subscribe(context.Background(), nil, 3)
	must(t, err)
	defer sub.Close()
	if g := next(t, sub).Index; g != 3 {
		t.Errorf("first replayed: got %d, want 3", g)
	}
	if g := next(t, sub).Index; g != 4 {
		t.Errorf("second replayed: got %d, want 4", g)
	}
	must(t, s.UpsertNode(5, testNode("n1")))
	if g := next(t, sub).Index; g != 5 {
		t.Errorf("live: got %d, want 5", g)
	}
}

func TestSlowSubscriberDropped(t *testing.T) {
	b := NewEventBroker(4)
	slow, err := b.Subscribe(context.Background(), nil, 0)
	must(t, err)
	for i := uint64(1); i <= 10; i++ { // never blocks although nobody reads
		b.Publish(i, []api.Event{{Topic: api.TopicNode, Key: "n"}})
	}
	if b.Subscribers() != 0 {
		t.Errorf("slow subscriber still registered")
	}
	var got []uint64
	for {
		ev, err := slow.Next(context.Background())
		if err != nil {
			if !errors.Is(err, ErrSubscriptionSlow) {
				t.Errorf("got %v, want ErrSubscriptionSlow", err)
			}
			break
		}
		got = append(got, ev.Index)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3, 4}, got); diff != "" {
		t.Errorf("delivered before the drop (-want +got):\n%s", diff)
	}

	sub, err := b.Subscribe(context.Background(), nil, 0)
	must(t, err)
	b.Close()
	if _, err := sub.Next(context.Background()); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("after Close: got %v", err)
	}
	if _, err := b.Subscribe(context.Background(), nil, 0); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("subscribe after Close: got %v", err)
	}
}

func TestSubscriptionNextHonoursContext(t *testing.T) {
	b := NewEventBroker(0)
	sub, err := b.Subscribe(context.Background(), nil, 0)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sub.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
}

// TestEventRingBoundedByEvents: the replay ring keeps at most size
// batches and, across them, at most MaxBufferedEvents events (the newest
// batch always), dropping the oldest batches whole.
func TestEventRingBoundedByEvents(t *testing.T) {
	b := NewEventBroker(8)
	batch := func(n int) []api.Event {
		evs := make([]api.Event, n)
		for i := range evs {
			evs[i] = api.Event{Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: "a"}
		}
		return evs
	}
	big := MaxBufferedEvents / 3
	for i := uint64(1); i <= 5; i++ {
		b.Publish(i, batch(big))
	}
	replayed := func() []uint64 {
		sub, err := b.Subscribe(context.Background(), nil, 1)
		must(t, err)
		defer sub.Close()
		var got []uint64
		for len(sub.ch) > 0 {
			got = append(got, next(t, sub).Index)
		}
		return got
	}
	if got, want := replayed(), []uint64{3, 4, 5}; !cmp.Equal(got, want) {
		t.Errorf("after 5 batches of %d events: replayed %v, want %v", big, got, want)
	}
	b.Publish(6, batch(MaxBufferedEvents+1)) // over the cap alone: kept by itself
	if got, want := replayed(), []uint64{6}; !cmp.Equal(got, want) {
		t.Errorf("after an oversized batch: replayed %v, want %v", got, want)
	}
	for i := uint64(7); i <= 20; i++ {
		b.Publish(i, batch(1))
	}
	if got := replayed(); len(got) != 8 || got[0] != 13 || got[7] != 20 {
		t.Errorf("after 14 small batches: replayed %v, want the last 8 (13..20)", got)
	}
}
