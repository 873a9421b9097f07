// Package serverstate adapts a *server.Server to the read and event
// interfaces of agent/http (http.State, http.EventSource). It exists so
// that agent/http itself imports no server package, while the agent and
// the HTTP tests bind a real server with one call.
//
// It imports agent/http, api and server; nothing but the agent and tests
// import it. Its adapters are stateless and safe for concurrent use.
package serverstate
