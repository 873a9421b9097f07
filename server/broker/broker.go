package broker

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// Errors returned by the eval broker.
var (
	// ErrDisabled is returned while the broker is disabled (not leader).
	ErrDisabled = errors.New("eval broker disabled")
	// ErrNotOutstanding is returned for an ack/nack of an eval that is not
	// in flight.
	ErrNotOutstanding = errors.New("evaluation is not outstanding")
	// ErrTokenMismatch is returned when the token does not match the
	// current delivery (the eval was redelivered meanwhile).
	ErrTokenMismatch = errors.New("evaluation token does not match")
)

// Config tunes an EvalBroker.
type Config struct {
	// NackTimeout is how long a dequeued eval may stay unacked before it
	// is redelivered (default 60 s).
	NackTimeout time.Duration
	// DeliveryLimit is how many deliveries an eval gets; the delivery that
	// reaches it and is nacked fails the eval (default 3).
	DeliveryLimit int
	// Clock drives nack timeouts, delays and Dequeue's timeout (default
	// the wall clock).
	Clock clock.Clock
	// InitialNackDelay and SubsequentNackDelay hold a nacked eval back
	// before its second and later redeliveries (0: redeliver at once), so
	// a persistent failure does not spin the workers.
	InitialNackDelay    time.Duration
	SubsequentNackDelay time.Duration
	// OnFailed is called (without locks, in the nacking goroutine) with
	// an eval that reached the delivery limit; the server marks it failed.
	OnFailed func(*api.Evaluation)
	// QueueDeficit, when set, is asked at every dequeue for the current
	// deficit function: how far an eval's job's queue is below its fair
	// share (the server computes it from state). With one, ready evals
	// are taken by the larger deficit first, then priority, then age;
	// nil (no queues) keeps the priority order. Both are called with the
	// broker's lock held, the function once per ready eval of the types
	// asked: they must be cheap (cached lookups) and must not call the
	// broker.
	QueueDeficit func() func(e *api.Evaluation) float64
}

// Stats counts the broker's evals.
type Stats struct {
	TotalReady   int
	TotalUnacked int
	TotalPending int // waiting behind another eval of the same job
	TotalDelayed int
	ByType       map[string]int // ready per scheduler type
}

type jobKey struct{ ns, id string }

type unacked struct {
	eval  *api.Evaluation
	token string
	timer clock.Timer
}

// EvalBroker hands evaluations to scheduler workers. At most one eval per
// job is ready or in flight; later ones wait in the job's pending queue.
type EvalBroker struct {
	cfg Config

	mu         sync.Mutex
	enabled    bool
	evals      map[string]int // eval ID -> deliveries so far (tracked evals)
	jobEvals   map[jobKey]string
	ready      map[string]*evalHeap // scheduler type -> ready
	pending    map[jobKey]*evalHeap
	unack      map[string]*unacked
	delayed    map[string]clock.Timer
	delayedEvs map[string]*api.Evaluation
	nackWait   map[string]clock.Timer // nacked evals waiting for redelivery
	notify     chan struct{}          // closed and replaced when something becomes ready
	// idle is closed while no eval is ready or in flight, and replaced by
	// an open one when one becomes ready (see Idle).
	idle chan struct{}
	seq  uint64
}

// NewEvalBroker returns a disabled broker.
func NewEvalBroker(cfg Config) *EvalBroker {
	if cfg.NackTimeout <= 0 {
		cfg.NackTimeout = 60 * time.Second
	}
	if cfg.DeliveryLimit <= 0 {
		cfg.DeliveryLimit = 3
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	b := &EvalBroker{cfg: cfg, notify: make(chan struct{}), idle: make(chan struct{})}
	close(b.idle)
	b.reset()
	return b
}

func (b *EvalBroker) reset() {
	for _, u := range b.unack {
		u.timer.Stop()
	}
	for _, t := range b.delayed {
		t.Stop()
	}
	for _, t := range b.nackWait {
		t.Stop()
	}
	b.evals = map[string]int{}
	b.jobEvals = map[jobKey]string{}
	b.ready = map[string]*evalHeap{}
	b.pending = map[jobKey]*evalHeap{}
	b.unack = map[string]*unacked{}
	b.delayed = map[string]clock.Timer{}
	b.delayedEvs = map[string]*api.Evaluation{}
	b.nackWait = map[string]clock.Timer{}
}

// SetEnabled turns the broker on (leader) or off (follower). Disabling
// flushes every eval and stops every timer; blocked Dequeue calls return
// ErrDisabled.
func (b *EvalBroker) SetEnabled(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled == on {
		return
	}
	b.enabled = on
	if !on {
		b.reset()
	}
	b.wakeLocked()
}

// Enabled reports whether the broker is on.
func (b *EvalBroker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

func (b *EvalBroker) wakeLocked() {
	close(b.notify)
	b.notify = make(chan struct{})
	b.idleLocked()
}

// Idle returns a channel closed once the broker is idle: no eval is ready
// and none is in flight (dequeued, not yet acked or nacked). Delayed
// evals (WaitUntil, a nack's redelivery delay) and the evals of the same
// job queued behind them wait for the clock, not for a worker, and do not
// count; neither do blocked evals (BlockedEvals is another structure). A
// disabled broker holds nothing and is idle. Take the channel after the
// work was enqueued: a channel taken while idle is already closed.
//
// A worker acks an eval only once its plan is applied, so after Idle a
// test sees every plan of the evals enqueued before.
func (b *EvalBroker) Idle() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.idle
}

// idleLocked closes idle when the broker became idle and replaces a
// closed one when it became busy.
func (b *EvalBroker) idleLocked() {
	busy := len(b.unack) > 0
	for _, h := range b.ready {
		busy = busy || h.Len() > 0
	}
	select {
	case <-b.idle:
		if busy {
			b.idle = make(chan struct{})
		}
	default:
		if !busy {
			close(b.idle)
		}
	}
}

// Enqueue adds an eval. Evals already tracked (by ID) are ignored, as are
// all evals while disabled. An eval whose WaitUntil is in the future is
// held until then.
func (b *EvalBroker) Enqueue(e *api.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	if _, ok := b.evals[e.ID]; ok {
		return
	}
	if _, ok := b.delayed[e.ID]; ok {
		return
	}
	if !e.WaitUntil.IsZero() {
		if d := e.WaitUntil.Sub(b.cfg.Clock.Now()); d > 0 {
			id := e.ID
			b.delayedEvs[id] = e
			b.delayed[id] = b.cfg.Clock.AfterFunc(d, func() { b.releaseDelayed(id) })
			return
		}
	}
	b.evals[e.ID] = 0
	b.enqueueLocked(e)
}

// EnqueueAll adds several evals.
func (b *EvalBroker) EnqueueAll(evals []*api.Evaluation) {
	for _, e := range evals {
		b.Enqueue(e)
	}
}

func (b *EvalBroker) releaseDelayed(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.delayedEvs[id]
	if !ok {
		return
	}
	delete(b.delayedEvs, id)
	delete(b.delayed, id)
	b.evals[id] = 0
	b.enqueueLocked(e)
}

// enqueueLocked puts a tracked eval into ready, or its job's pending queue
// when another eval of the job is ready or in flight.
func (b *EvalBroker) enqueueLocked(e *api.Evaluation) {
	k := jobKey{e.Namespace, e.JobID}
	b.seq++
	if cur, ok := b.jobEvals[k]; ok && cur != e.ID {
		h := b.pending[k]
		if h == nil {
			h = &evalHeap{}
			b.pending[k] = h
		}
		heap.Push(h, item{e, b.seq})
		return
	}
	b.jobEvals[k] = e.ID
	h := b.ready[e.Type]
	if h == nil {
		h = &evalHeap{}
		b.ready[e.Type] = h
	}
	heap.Push(h, item{e, b.seq})
	b.wakeLocked()
}

// Dequeue waits up to timeout (0 = until ctx ends) for a ready eval of one
// of the scheduler types and returns it with its delivery token. It
// returns (nil, "", nil) on timeout.
func (b *EvalBroker) Dequeue(ctx context.Context, types []string, timeout time.Duration) (*api.Evaluation, string, error) {
	var expired chan struct{}
	if timeout > 0 {
		expired = make(chan struct{})
		t := b.cfg.Clock.AfterFunc(timeout, func() { close(expired) })
		defer t.Stop()
	}
	for {
		b.mu.Lock()
		if !b.enabled {
			b.mu.Unlock()
			return nil, "", ErrDisabled
		}
		if e, tok := b.takeLocked(types); e != nil {
			b.mu.Unlock()
			return e, tok, nil
		}
		wait := b.notify
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-expired:
			return nil, "", nil
		case <-wait:
		}
	}
}

func (b *EvalBroker) takeLocked(types []string) (*api.Evaluation, string) {
	var it item
	var deficit func(*api.Evaluation) float64
	if b.cfg.QueueDeficit != nil {
		deficit = b.cfg.QueueDeficit()
	}
	if deficit != nil {
		var ok bool
		if it, ok = b.takeByDeficitLocked(types, deficit); !ok {
			return nil, ""
		}
	} else {
		var best *evalHeap
		for _, t := range types {
			h := b.ready[t]
			if h == nil || h.Len() == 0 {
				continue
			}
			if best == nil || h.less((*h)[0], (*best)[0]) {
				best = h
			}
		}
		if best == nil {
			return nil, ""
		}
		it = heap.Pop(best).(item)
	}
	e := it.e
	tok := newID()
	b.evals[e.ID]++
	id := e.ID
	u := &unacked{eval: e, token: tok}
	u.timer = b.cfg.Clock.AfterFunc(b.cfg.NackTimeout, func() { _ = b.Nack(id, tok) })
	b.unack[id] = u
	return e, tok
}

// takeByDeficitLocked removes and returns the ready eval of the types
// whose queue is furthest below its fair share (Config.QueueDeficit),
// then the highest priority, then the oldest. Deficits change with every
// plan, so they are read at each dequeue (a linear scan, one lookup per
// ready eval) rather than kept in the heap order.
func (b *EvalBroker) takeByDeficitLocked(types []string, deficit func(*api.Evaluation) float64) (item, bool) {
	var bh *evalHeap
	bi, bd := -1, 0.0
	for _, t := range types {
		h := b.ready[t]
		if h == nil {
			continue
		}
		for i, it := range *h {
			d := deficit(it.e)
			if bi < 0 || d > bd || d == bd && h.less(it, (*bh)[bi]) {
				bh, bi, bd = h, i, d
			}
		}
	}
	if bi < 0 {
		return item{}, false
	}
	return heap.Remove(bh, bi).(item), true
}

// Outstanding returns the token of an in-flight eval.
func (b *EvalBroker) Outstanding(evalID string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return u.token, true
}

// OutstandingReset restarts the nack timer of an in-flight eval (a worker
// that is still busy with it calls this).
func (b *EvalBroker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.checkLocked(evalID, token)
	if err != nil {
		return err
	}
	if !u.timer.Stop() {
		return fmt.Errorf("eval %s: nack timer already fired: %w", evalID, ErrNotOutstanding)
	}
	u.timer = b.cfg.Clock.AfterFunc(b.cfg.NackTimeout, func() { _ = b.Nack(evalID, token) })
	return nil
}

func (b *EvalBroker) checkLocked(evalID, token string) (*unacked, error) {
	u, ok := b.unack[evalID]
	if !ok {
		return nil, fmt.Errorf("eval %s: %w", evalID, ErrNotOutstanding)
	}
	if u.token != token {
		return nil, fmt.Errorf("eval %s: %w", evalID, ErrTokenMismatch)
	}
	return u, nil
}

// Ack completes an in-flight eval; the next pending eval of its job
// becomes ready.
func (b *EvalBroker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.checkLocked(evalID, token)
	if err != nil {
		return err
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	delete(b.evals, evalID)
	b.releaseJobLocked(u.eval)
	b.idleLocked()
	return nil
}

func (b *EvalBroker) releaseJobLocked(e *api.Evaluation) {
	k := jobKey{e.Namespace, e.JobID}
	if b.jobEvals[k] == e.ID {
		delete(b.jobEvals, k)
	}
	h := b.pending[k]
	if h == nil || h.Len() == 0 {
		delete(b.pending, k)
		return
	}
	next := heap.Pop(h).(item).e
	if h.Len() == 0 {
		delete(b.pending, k)
	}
	b.enqueueLocked(next)
}

// Nack returns an in-flight eval: it is redelivered, or failed through
// Config.OnFailed once it has been delivered DeliveryLimit times.
func (b *EvalBroker) Nack(evalID, token string) error {
	b.mu.Lock()
	u, err := b.checkLocked(evalID, token)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	if b.evals[evalID] >= b.cfg.DeliveryLimit {
		delete(b.evals, evalID)
		b.releaseJobLocked(u.eval)
		b.idleLocked()
		b.mu.Unlock()
		if b.cfg.OnFailed != nil {
			b.cfg.OnFailed(u.eval)
		}
		return nil
	}
	// Redeliver: it keeps its job slot and goes back to ready, after the
	// nack delay if one is configured.
	delay := b.cfg.InitialNackDelay
	if b.evals[evalID] > 1 {
		delay = b.cfg.SubsequentNackDelay
	}
	if delay > 0 {
		e := u.eval
		b.nackWait[evalID] = b.cfg.Clock.AfterFunc(delay, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if _, ok := b.nackWait[e.ID]; !ok {
				return // flushed meanwhile
			}
			delete(b.nackWait, e.ID)
			b.readyLocked(e)
		})
		b.idleLocked()
		b.mu.Unlock()
		return nil
	}
	b.readyLocked(u.eval)
	b.mu.Unlock()
	return nil
}

// readyLocked pushes an eval that holds its job slot back to ready.
func (b *EvalBroker) readyLocked(e *api.Evaluation) {
	b.seq++
	h := b.ready[e.Type]
	if h == nil {
		h = &evalHeap{}
		b.ready[e.Type] = h
	}
	heap.Push(h, item{e, b.seq})
	b.wakeLocked()
}

// Stats returns the current counts.
func (b *EvalBroker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{ByType: map[string]int{}, TotalUnacked: len(b.unack), TotalDelayed: len(b.delayed) + len(b.nackWait)}
	for t, h := range b.ready {
		s.TotalReady += h.Len()
		s.ByType[t] = h.Len()
	}
	for _, h := range b.pending {
		s.TotalPending += h.Len()
	}
	return s
}

// item is a heap entry; seq breaks ties FIFO among equal CreateIndex.
type item struct {
	e   *api.Evaluation
	seq uint64
}

// evalHeap orders by Priority (higher first), then CreateIndex, then
// arrival.
type evalHeap []item

func (h evalHeap) less(a, b item) bool {
	if a.e.Priority != b.e.Priority {
		return a.e.Priority > b.e.Priority
	}
	if a.e.CreateIndex != b.e.CreateIndex {
		return a.e.CreateIndex < b.e.CreateIndex
	}
	return a.seq < b.seq
}
func (h evalHeap) Len() int           { return len(h) }
func (h evalHeap) Less(i, j int) bool { return h.less(h[i], h[j]) }
func (h evalHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evalHeap) Push(x any)        { *h = append(*h, x.(item)) }
func (h *evalHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = item{}
	*h = old[:n-1]
	return it
}

// newID returns a random UUID-shaped string.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
