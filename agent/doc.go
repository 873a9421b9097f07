// Package agent is process wiring: agent configuration (HCL file + flags),
// the HTTP server and its routes, the client role (fingerprint,
// allocrunner, taskrunner, client state in bbolt), gossip, dev mode and
// the cobra CLI (agent/cli).
//
// It may import api, jobspec, server and drivers; nothing imports agent
// but main.
package agent
