// Package config is the agent's configuration: the HCL agent config file
// (Nomad's agent grammar: name, region, datacenter, data_dir, bind_addr,
// ports, server { ... }, client { ... } (with meta, options and a
// topology { rack = "r1" } block of network topology levels, which become
// node meta "topology.<level>"), plugin "name" { config { ... } },
// limits { ... } of the HTTP API, acl { enabled }, insecure,
// tls { http, ca_file, cert_file, key_file, verify_server_hostname,
// verify_https_client }),
// defaults, dev-mode settings, merging of files and command-line flags, and
// validation. Secure defaults: the agent binds 127.0.0.1, and a bind
// address other machines can reach is refused while ACLs are off unless
// insecure is set.
//
// It imports only the standard library, hcl/v2 and go-cty (no drover
// package but api): the agent turns a Config into server.Config and
// client.Config.
//
// Concurrency: a Config is a plain value; callers do not share one while
// mutating it.
package config
