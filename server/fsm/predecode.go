package fsm

import "sync"

// The leader commits plans of up to 10,000 allocs (~11 MB of JSON).
// Decoding one on the FSM goroutine, which applies every entry in turn,
// kept that goroutine busy ~0.1 s a plan, a third of its time under load.
// Predecode decodes the same bytes on another goroutine while the entry
// is appended and fsynced; Apply, given that very slice (the leader's
// Raft hands the FSM the entry it was given), takes the result. It is
// what any follower decodes from those bytes: the state stays identical.

// predecoded is an entry being decoded off the FSM goroutine.
type predecoded struct {
	done chan struct{} // closed once req and err are set
	req  *ApplyPlanResultsRequest
	err  error
}

// predecodes maps an entry (its first byte) to its decoding.
type predecodes struct {
	mu sync.Mutex
	m  map[*byte]*predecoded
}

// Predecode starts decoding entry, an ApplyPlanResults command about to be
// given to Raft, for Apply to take when it applies that slice. release
// drops it (call once the Raft apply returned: an entry that was never
// applied, say on a lost leadership, must not stay). Other commands are
// left to Apply.
func (f *FSM) Predecode(entry []byte) (release func()) {
	if len(entry) == 0 || MessageType(entry[0]) != ApplyPlanResultsType {
		return func() {}
	}
	p := &predecoded{done: make(chan struct{})}
	key := &entry[0]
	f.pre.mu.Lock()
	if f.pre.m == nil {
		f.pre.m = map[*byte]*predecoded{}
	}
	f.pre.m[key] = p
	f.pre.mu.Unlock()
	go func() {
		defer close(p.done)
		scratch := decodeBufs.Get().(*[]byte)
		defer decodeBufs.Put(scratch)
		_, body, err := decode(entry, scratch) // an ApplyPlanResults entry (checked above)
		if err == nil {
			p.req, err = decodeBody[ApplyPlanResultsRequest](body) // copies the body
		}
		p.err = err
	}()
	return func() {
		f.pre.mu.Lock()
		delete(f.pre.m, key)
		f.pre.mu.Unlock()
	}
}

// takePredecoded returns the decoded plan of data, when Predecode has it,
// waiting for its decoding; it is taken once.
func (f *FSM) takePredecoded(data []byte) (*ApplyPlanResultsRequest, bool) {
	if len(data) == 0 || MessageType(data[0]) != ApplyPlanResultsType {
		return nil, false // only plans are predecoded: no lock for the rest
	}
	f.pre.mu.Lock()
	p := f.pre.m[&data[0]]
	delete(f.pre.m, &data[0])
	f.pre.mu.Unlock()
	if p == nil {
		return nil, false
	}
	<-p.done
	return p.req, p.err == nil
}
