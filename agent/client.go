package agent

import (
	"context"
	"errors"
	nethttp "net/http"
)

// clientRole is what the agent needs of the client role.
type clientRole interface {
	Handler() nethttp.Handler
	HasAlloc(id string) bool
	Shutdown(ctx context.Context) error
}

// startClient builds and starts the client role.
func (a *Agent) startClient(ctx context.Context) (clientRole, error) {
	return nil, errClientUnavailable
}

var errClientUnavailable = errors.New("the client role is not built into this binary yet")
