// Package ctrtest starts a private containerd daemon for tests: its own
// root, state and socket in a directory, a minimal config (no CRI, only the
// overlayfs snapshotter), stopped with everything it ran at the end. No
// system service is used.
//
// Imports: containerd's client and the standard library; no drover
// package.
//
// Concurrency: a Daemon is owned by one goroutine (a TestMain or a test);
// Stop waits for the daemon process.
package ctrtest
