// Package broker owns the leader's work queues: the evaluation broker
// (ready evals by scheduler type in priority order, or by queue deficit
// (Config.QueueDeficit: the queue furthest below its fair share first),
// then priority, then age, at most one in flight
// per job, ack/nack with redelivery, nack timeouts, delayed evals), the
// blocked-evals tracker (evals that could not be placed, woken when
// capacity changes) and the plan queue (plans from workers, consumed by a
// single applier in priority order, each submitter holding a future).
//
// Imports: api, internal/clock and the standard library only; never
// server/state, agent or drivers.
//
// Concurrency: every exported method is safe for concurrent use; each type
// guards its state with one mutex. Callbacks (failed-eval, unblocked-eval)
// are invoked without any lock held. Timers come from the injected clock
// (internal/clock), so tests drive time with clock.Fake and never sleep.
// Disabled structures (followers) hold nothing: SetEnabled(false) flushes
// and stops timers. EvalBroker.Idle is a channel closed once no eval is
// ready or in flight, so tests wait for the workers instead of polling.
package broker
