package sim

import (
	"container/heap"
	"sync"
	"time"
)

// Timer kinds: what firing does to a node.
const (
	tHeartbeat = iota // send the node's heartbeat
	tStart            // the alloc's run delay is over: running (or failed)
	tEnd              // the alloc's CompleteAfter is over: complete or failed
	tRegister         // register the node again
)

type timer struct {
	at    time.Time
	kind  int
	node  *simNode
	alloc string
}

// timerHeap holds every node's pending timers; one goroutine (timerLoop)
// fires them, so 10,000 nodes need no 10,000 sleeping goroutines.
type timerHeap struct {
	mu   sync.Mutex
	h    timerSlice
	wake chan struct{}
}

type timerSlice []timer

func (t timerSlice) Len() int           { return len(t) }
func (t timerSlice) Less(i, j int) bool { return t[i].at.Before(t[j].at) }
func (t timerSlice) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *timerSlice) Push(x any)        { *t = append(*t, x.(timer)) }
func (t *timerSlice) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}

func newTimerHeap() *timerHeap { return &timerHeap{wake: make(chan struct{}, 1)} }

func (th *timerHeap) add(t timer) {
	th.mu.Lock()
	heap.Push(&th.h, t)
	first := th.h[0].at.Equal(t.at)
	th.mu.Unlock()
	if first {
		th.nudge()
	}
}

// wake nudges timerLoop without blocking.
func (th *timerHeap) nudge() {
	select {
	case th.wake <- struct{}{}:
	default:
	}
}

// due pops the timers due at now and returns the wait until the next one
// (-1: none).
func (th *timerHeap) due(now time.Time, out []timer) ([]timer, time.Duration) {
	th.mu.Lock()
	defer th.mu.Unlock()
	for len(th.h) > 0 && !th.h[0].at.After(now) {
		out = append(out, heap.Pop(&th.h).(timer))
	}
	if len(th.h) == 0 {
		return out, -1
	}
	return out, th.h[0].at.Sub(now)
}

// timerLoop fires timers until the simulator stops.
func (s *Sim) timerLoop() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var batch []timer
	for {
		var wait time.Duration
		batch, wait = s.timers.due(time.Now(), batch[:0])
		for _, tm := range batch {
			s.fire(tm)
		}
		if len(batch) > 0 {
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.timers.wake:
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Sim) fire(tm timer) {
	n := tm.node
	if n.ctx.Err() != nil {
		return
	}
	switch tm.kind {
	case tHeartbeat:
		s.submitHB(n.heartbeat)
	case tRegister:
		s.submitHB(func() { n.reregister() })
	case tStart:
		n.start(tm.alloc)
	case tEnd:
		n.end(tm.alloc)
	}
}
