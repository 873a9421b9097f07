package gossip

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate answers memberlist: our tags as node metadata, and user
// messages (keyring requests and answers) handed to the key worker.
type delegate struct{ g *Gossip }

func (d *delegate) NodeMeta(limit int) []byte {
	d.g.mu.Lock()
	b, err := encodeTags(d.g.tags)
	d.g.mu.Unlock()
	if err != nil || len(b) > limit {
		return nil // SetTags and New refuse such tags; never reached
	}
	return b
}

// NotifyMsg runs on memberlist's goroutine: it copies and queues.
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case msgLeaveIntent:
		d.g.mu.Lock()
		d.g.leaveIntents[string(b[1:])] = true
		d.g.mu.Unlock()
		return
	case msgForceLeave:
		_ = d.g.RemoveFailed(string(b[1:])) // not failed here (yet): nothing to do
		return
	}
	d.g.keyOps.queue(append([]byte(nil), b...), d.g.log)
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// acceptor applies Config.Accept to members memberlist learns of: one at
// a time as they gossip (alive), and a join's whole answer (merge), so a
// join to a pool of the wrong kind fails instead of mixing the pools.
type acceptor struct{ accept func(Member) error }

func (a *acceptor) NotifyAlive(n *memberlist.Node) error { return a.accept(toMember(n)) }

func (a *acceptor) NotifyMerge(peers []*memberlist.Node) error {
	for _, n := range peers {
		if err := a.accept(toMember(n)); err != nil {
			return err
		}
	}
	return nil
}

// events keeps the member table; it never blocks memberlist.
type events struct{ g *Gossip }

func (e *events) NotifyJoin(n *memberlist.Node)   { e.g.upsert(n, false) }
func (e *events) NotifyUpdate(n *memberlist.Node) { e.g.upsert(n, false) }
func (e *events) NotifyLeave(n *memberlist.Node)  { e.g.upsert(n, true) }

// conflicts reports a second member claiming this process's name (or two
// others sharing one): memberlist keeps the first and ignores the other,
// so such servers would never see each other. Every server needs its own
// name (-node).
type conflicts struct{ g *Gossip }

func (c *conflicts) NotifyConflict(existing, other *memberlist.Node) {
	c.g.log.Error("gossip: another member uses the same node name; give every server a distinct -node",
		"name", existing.Name, "existing", existing.Address(), "other", other.Address())
	c.g.mu.Lock()
	c.g.nameConflicts++
	c.g.mu.Unlock()
}

// upsert records a member: alive on join/update; on leave, "left" when it
// announced its leave, else "failed" (memberlist's Node does not carry
// the dead/left distinction to the event delegate).
func (g *Gossip) upsert(n *memberlist.Node, gone bool) {
	m := toMember(n)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !gone:
		m.Status = StatusAlive
		delete(g.leaveIntents, m.Name)
	case g.leaveIntents[m.Name]:
		m.Status = StatusLeft
		delete(g.leaveIntents, m.Name)
	default:
		m.Status = StatusFailed
	}
	old, ok := g.members[m.Name]
	since := time.Now()
	if ok && old.Status == m.Status {
		since = old.since
	}
	if ok && old.Status != m.Status {
		g.log.Info("member status changed", "member", m.Name, "from", old.Status, "to", m.Status)
	} else if !ok {
		g.log.Info("member joined", "member", m.Name, "addr", m.Address())
	}
	g.members[m.Name] = &memberState{Member: m, since: since}
	g.notifyLocked()
}
