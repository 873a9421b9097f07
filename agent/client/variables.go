package client

import (
	"context"
	"errors"
	"time"

	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
)

// varReader reads variables from the servers for templates, with the
// task's workload identity as the request's token (it takes precedence
// over the node secret the server list adds).
type varReader struct{ c *Client }

var _ taskrunner.VariableReader = varReader{}

func (r varReader) Variable(ctx context.Context, token, ns, path string, index uint64, wait time.Duration) (*api.Variable, uint64, error) {
	var v *api.Variable
	var qm *api.QueryMeta
	err := r.c.servers.do(ctx, func(cl *api.Client) error {
		cl.Token = token
		var err error
		v, qm, err = cl.Variable(ctx, path, &api.QueryOptions{Namespace: ns, WaitIndex: index, WaitTime: wait})
		return err
	})
	if errors.Is(err, api.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return v, qm.LastIndex, nil
}

func (r varReader) Variables(ctx context.Context, token, ns, prefix string, index uint64, wait time.Duration) ([]*api.VariableMetadata, uint64, error) {
	var out []*api.VariableMetadata
	var qm *api.QueryMeta
	err := r.c.servers.do(ctx, func(cl *api.Client) error {
		cl.Token = token
		var err error
		out, qm, err = cl.Variables(ctx, &api.QueryOptions{Namespace: ns, Prefix: prefix, WaitIndex: index, WaitTime: wait})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, qm.LastIndex, nil
}
