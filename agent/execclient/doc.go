// Package execclient is the client side of the alloc exec websocket
// (GET /v1/client/allocation/{alloc}/exec): it dials it with
// github.com/coder/websocket, sends stdin and terminal sizes as
// api.ExecStreamFrame messages and copies the stdout and stderr frames to
// writers until the exited frame gives the exit code.
//
// Imports: api only (api itself must stay standard-library only, which is
// why the websocket transport lives here).
//
// Concurrency: Exec owns the goroutines it starts (stdin pump, resize
// pump) and waits for them before it returns, except for a blocked
// stdin Read, which it abandons as io.Copy into a pipe would; one Exec
// call per connection.
package execclient
