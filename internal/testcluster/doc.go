// Package testcluster starts in-process servers and agents for tests and
// waits on them through their signals, never by polling: a server's Ready
// (it leads, its duties run) and LeaderChanged, the broker's idle signal
// (BrokerIdle), memdb watches on the server's state, and a client's
// registration. It is to drover what hashicorp/raft's MakeCluster is to
// raft.
//
// Server starts a dev-mode server (in-memory Raft on 127.0.0.1) and waits
// until it is ready; Agent starts a whole agent (server, client or both)
// and waits until each of its roles is ready; Leader waits until servers
// agree on one leader. WaitReady, WaitIdle and WaitState wait on one
// server. For what has no signal (another process, an HTTP server of a
// real agent, a fake's counters) use testproc.Eventually.
//
// Test-only: only _test.go files import it (layout_test.go). Imports:
// server, agent, agent/config and hashicorp memdb; so the package-internal
// tests of server and of what agent imports cannot use it (an import
// cycle): they wait on the same signals directly.
//
// Concurrency: every function is called from the test's goroutine;
// what it starts is stopped by the test's cleanup.
package testcluster
