package executor

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// SupervisedTask is a driver's task that runs under a supervisor.
type SupervisedTask interface {
	comparable
	// Process is the task's supervisor.
	Process() *Process
	// Exit is how the task ended, once Process is done.
	Exit() *drivers.ExitResult
}

// Supervised is the task table of a driver whose tasks run under a
// supervisor (exec, raw_exec and qemu), with the driver calls that need
// no more of a task than its Process.
type Supervised[T SupervisedTask] struct {
	drivers.Tasks[T]
}

// WaitTask yields the task's exit once (drivers.Driver).
func (s *Supervised[T]) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	t, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	return drivers.WaitExit(ctx, t.Process().Done(), t.Exit), nil
}

// TaskStats reports the task's memory and CPU use (drivers.Statser).
func (s *Supervised[T]) TaskStats(_ context.Context, id string) (*api.TaskResourceUsage, error) {
	t, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	u, err := t.Process().Stats()
	if err != nil {
		return nil, fmt.Errorf("stats of task %q: %w", id, err)
	}
	return u, nil
}

// DestroyTask refuses a running task (ErrTaskRunning) unless force, then
// kills it, calling killing first when it is not nil. Then the task's
// supervisor state and cgroup go, and what release (when not nil) frees,
// and the task leaves the table.
func (s *Supervised[T]) DestroyTask(ctx context.Context, id string, force bool, killing func(T), release func(T) error) error {
	t, err := s.Get(id)
	if err != nil {
		return err
	}
	p := t.Process()
	if !p.Exited() {
		if !force {
			return fmt.Errorf("destroy task %q: %w", id, ErrTaskRunning)
		}
		if killing != nil {
			killing(t)
		}
		if err := p.Kill(ctx); err != nil {
			return fmt.Errorf("destroy task %q: %w", id, err)
		}
	}
	p.Close()
	var errs []error
	if p.State.Cgroup != "" {
		if err := DeleteCgroup(p.State.Cgroup); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(p.State.StateDir); err != nil {
		errs = append(errs, err)
	}
	if release != nil {
		if err := release(t); err != nil {
			errs = append(errs, err)
		}
	}
	s.Delete(id)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroy task %q: %w", id, err)
	}
	return nil
}

// ExitResult is a supervisor's Result as a driver reports it.
func ExitResult(r *Result) *drivers.ExitResult {
	out := &drivers.ExitResult{ExitCode: r.ExitCode, Signal: r.Signal, OOMKilled: r.OOMKilled}
	if r.Err != "" {
		out.Err = errors.New(r.Err)
	}
	return out
}
