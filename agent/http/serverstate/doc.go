// Package serverstate binds a *server.Server to the server role of
// agent/http (Bind): each resource's backend is the server component that
// owns it (server.Jobs, server.Nodes, server.ACL ...; the server itself
// for leadership and Raft), and reads ask the server for its current
// state store, so that agent/http itself imports no server package while
// the agent and the HTTP tests bind a real server with one call. It also
// holds the compile-time checks that the components and the state store
// satisfy the interfaces agent/http consumes.
//
// It imports agent/http, api and server; nothing but the agent and tests
// import it. Its adapters are stateless and safe for concurrent use.
package serverstate
