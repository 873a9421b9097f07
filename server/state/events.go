package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/drover/drover/api"
)

// Event broker errors.
var (
	// ErrSubscriptionSlow ends a subscription whose reader fell more than
	// its buffer behind; the writer never waits for a reader. Resubscribe
	// from the last index seen.
	ErrSubscriptionSlow = errors.New("event subscriber too slow, dropped")
	// ErrSubscriptionClosed ends a subscription closed by Close or by the
	// broker's Close.
	ErrSubscriptionClosed = errors.New("event subscription closed")
)

// DefaultEventBufferSize is how many batches the broker keeps for replay
// and how many a subscriber may have pending before it is dropped.
const DefaultEventBufferSize = 1024

// MaxBufferedEvents bounds the events the replay ring holds across its
// batches (the newest batch is always kept): each event pins a copy of the
// object it reports, and a batch of a 10,000-alloc plan holds 10,000, so
// 1,024 batches alone could pin several copies of every alloc of a
// large cluster.
const MaxBufferedEvents = 16384

// EventBroker fans out change events to subscribers. Publish never blocks:
// each subscription has a bounded queue and is dropped with
// ErrSubscriptionSlow when it overflows. The broker keeps the last batches
// in a ring so a subscriber can start from an earlier index.
//
// Safe for concurrent use.
type EventBroker struct {
	size int

	mu     sync.Mutex
	ring   []api.Events // at most size batches, MaxBufferedEvents events; oldest first
	events int          // events in ring
	subs   map[*Subscription]struct{}
	closed bool
}

// NewEventBroker returns a broker keeping size batches (<= 0: default).
func NewEventBroker(size int) *EventBroker {
	if size <= 0 {
		size = DefaultEventBufferSize
	}
	return &EventBroker{size: size, subs: map[*Subscription]struct{}{}}
}

// Subscription is one subscriber's view of the stream. Read it with Next
// from a single goroutine; Close it when done.
type Subscription struct {
	b      *EventBroker
	topics map[string][]string
	ch     chan api.Events

	mu   sync.Mutex
	err  error
	done chan struct{}
}

// Subscribe starts a subscription filtered by topics: topic -> keys, where
// topic "*" matches every topic and key "*" (or no keys) every key; a key
// matches an event's Key or any of its FilterKeys. A nil or empty map means
// everything. With fromIndex > 0 the buffered batches with Index >=
// fromIndex are delivered first; with 0 only new batches are.
func (b *EventBroker) Subscribe(ctx context.Context, topics map[string][]string, fromIndex uint64) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	s := &Subscription{b: b, topics: topics, ch: make(chan api.Events, b.size), done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("subscribe: %w", ErrSubscriptionClosed)
	}
	if fromIndex > 0 {
		for _, batch := range b.ring {
			if batch.Index < fromIndex {
				continue
			}
			if f, ok := s.filter(batch); ok {
				s.ch <- f // cannot block: the ring is no larger than ch
			}
		}
	}
	b.subs[s] = struct{}{}
	return s, nil
}

// Publish delivers one write's events (all with the write's index).
func (b *EventBroker) Publish(index uint64, events []api.Event) {
	if len(events) == 0 {
		return
	}
	for i := range events {
		events[i].Index = index
	}
	batch := api.Events{Index: index, Events: events}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.ring = append(b.ring, batch)
	b.events += len(events)
	drop := 0
	for len(b.ring)-drop > 1 && (len(b.ring)-drop > b.size || b.events > MaxBufferedEvents) {
		b.events -= len(b.ring[drop].Events)
		b.ring[drop] = api.Events{} // unpin the dropped batch's objects
		drop++
	}
	if drop > 0 {
		n := copy(b.ring, b.ring[drop:])
		clear(b.ring[n:])
		b.ring = b.ring[:n]
	}
	for s := range b.subs {
		f, ok := s.filter(batch)
		if !ok {
			continue
		}
		select {
		case s.ch <- f:
		default:
			delete(b.subs, s)
			s.end(ErrSubscriptionSlow)
		}
	}
}

// Close ends every subscription; later Subscribe calls fail.
func (b *EventBroker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		s.end(ErrSubscriptionClosed)
	}
}

// Subscribers returns the number of live subscriptions.
func (b *EventBroker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

func (s *Subscription) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.done)
	}
}

// Next returns the next batch. Batches queued before the subscription ended
// are still returned; then the ending error (ErrSubscriptionSlow or
// ErrSubscriptionClosed), or ctx's error.
func (s *Subscription) Next(ctx context.Context) (api.Events, error) {
	select {
	case e := <-s.ch:
		return e, nil
	default:
	}
	select {
	case e := <-s.ch:
		return e, nil
	case <-s.done:
		select {
		case e := <-s.ch:
			return e, nil
		default:
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return api.Events{}, s.err
	case <-ctx.Done():
		return api.Events{}, ctx.Err()
	}
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	s.end(ErrSubscriptionClosed)
}

// filter returns the batch's events that match, and whether any did.
func (s *Subscription) filter(batch api.Events) (api.Events, bool) {
	if len(s.topics) == 0 {
		return batch, true
	}
	var out []api.Event
	all := true
	for _, e := range batch.Events {
		if s.matches(e) {
			out = append(out, e)
		} else {
			all = false
		}
	}
	if all {
		return batch, true
	}
	return api.Events{Index: batch.Index, Events: out}, len(out) > 0
}

func (s *Subscription) matches(e api.Event) bool {
	if keys, ok := s.topics[e.Topic]; ok && keysMatch(keys, e) {
		return true
	}
	keys, ok := s.topics[api.TopicAll]
	return ok && keysMatch(keys, e)
}

func keysMatch(keys []string, e api.Event) bool {
	if len(keys) == 0 {
		return true
	}
	for _, k := range keys {
		if k == "*" || k == e.Key {
			return true
		}
		for _, fk := range e.FilterKeys {
			if k == fk {
				return true
			}
		}
	}
	return false
}
