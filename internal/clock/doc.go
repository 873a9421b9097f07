// Package clock is the one time source of the server and the client: a
// Clock interface (Now, After, AfterFunc, AtFunc), the wall clock Real,
// and Fake, a manually advanced clock for tests. Everything that waits
// for time (the eval broker, heartbeats, drains, periodic launches,
// deployments, task restarts, the client's loops, grants, the remote ACL
// cache) takes a Clock, so tests drive time with Fake and never sleep.
// Backoff is the retry delay of every loop that retries with backoff,
// waited on a Clock.
//
// Fake: timers fire only when Advance passes their due time, in due
// order, in Advance's goroutine (AfterFunc callbacks run synchronously,
// without the clock's lock held; After channels are buffered). Pending
// and NextIn say what is armed, and WaitPending blocks until a goroutine
// has parked on the clock (woken at each arm, stop and fire), so a test
// waits for it instead of polling or sleeping.
//
// Imports: the standard library only. Both server and agent import it,
// which is why it lives under internal/ rather than in either role.
//
// Concurrency: Real and Fake are safe for concurrent use; a Backoff
// belongs to the one loop that retries.
package clock
