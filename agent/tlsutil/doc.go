// Package tlsutil is drover's mutual TLS: a private CA and role-bound
// certificates (server.<region>.drover, client.<region>.drover,
// cli.<region>.drover, as Nomad's .nomad names) for `drover tls ca
// create` and `drover tls cert create`, and the agent's TLS settings
// turned into the tls.Config of its HTTP API (which can require a client
// certificate from the CA) and of its own outgoing requests (to servers,
// to other nodes), which present the agent's certificate and, with
// verify_server_hostname, accept only a peer whose certificate carries an
// agent role name of the region, whatever address it was dialled at; and
// the pair of Raft between servers (Config.Raft), which accepts only
// server certificates on both ends.
//
// It imports only the standard library.
//
// Concurrency: the functions are pure; the tls.Configs they return are
// safe for concurrent use once built.
package tlsutil
