// Package logmon fans an agent's log records out to live monitors
// (`drover monitor`, GET /v1/agent/monitor), each at its own level and
// format, next to the agent's own log output.
//
// What it owns: Hub (the subscribers), the tee slog.Handler the agent
// logs through, and Subscription (a bounded queue of formatted lines).
// It imports only the standard library.
//
// Concurrency: Hub and its handlers are safe for concurrent use. Logging
// never blocks on a monitor: a subscriber whose queue is full loses the
// record (Dropped counts them) so a slow reader cannot stall the agent.
package logmon
