// Package allocrunner runs one allocation on a client: it builds the
// alloc dir (DataDir/alloc/<allocID>/ with alloc/{logs,data,tmp} and per
// task local/, secrets/ (0700), tmp/) and, for a gang member, the gang's
// alloc/gang/hosts (/etc/hosts format) and alloc/gang/hostfile (MPI),
// written without following links the tasks may plant; creates a task runner per task,
// orders them by lifecycle (prestart -> main -> poststart, poststop after
// the main tasks end), kills sidecars when the main tasks finish and
// siblings when the leader dies or a main task fails, applies desired
// status changes from the server (stop/evict, in-place job updates) and
// derives the alloc's client status from its task states. Before a stop
// signals the tasks it writes why to alloc/stop_reason (StopReason:
// preempted, drained, node_lost, stopped or interrupted), so a task's
// kill_signal handler can decide to write a final checkpoint.
//
// Imports: api, drivers, agent/taskrunner, agent/clientstate,
// internal/clock. Never server.
//
// Concurrency: one goroutine, Run, owned and waited for by the client;
// it starts and waits for the task runner goroutines. Update, Kill,
// KillFor, Alloc, Restart, Signal and Stats are safe from any goroutine.
package allocrunner
