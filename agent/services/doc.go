// Package services runs the client side of native service discovery
// (Nomad's provider = "nomad"): the Registrar keeps the servers' copy of
// this node's service registrations equal to what its allocs want, and
// an Alloc registers one allocation's group and task services while
// their tasks run, runs their health checks (http, tcp, script, grpc),
// folds the results into each registration's Health and restarts tasks
// whose checks stay unhealthy (check_restart).
package services
