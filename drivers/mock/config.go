package mock

import (
	"fmt"
	"time"

	"github.com/drover/drover/drivers"
)

// TaskConfig is the mock task's config block.
type TaskConfig struct {
	// RunFor is how long the task runs (0 = exits right after its output).
	RunFor time.Duration `json:"run_for"`
	// ExitCode, ExitSignal, ExitErrMsg and OOMKilled shape the exit.
	ExitCode   int    `json:"exit_code"`
	ExitSignal int    `json:"exit_signal"`
	ExitErrMsg string `json:"exit_err_msg"`
	OOMKilled  bool   `json:"oom_killed"`
	// StartError makes StartTask fail with this message.
	StartError string `json:"start_error"`
	// StartBlockFor delays StartTask.
	StartBlockFor time.Duration `json:"start_block_for"`
	// KillAfter is how long the task takes to exit after a stop signal;
	// beyond the stop timeout it is "killed" (signal 9).
	KillAfter time.Duration `json:"kill_after"`
	// StdoutString is written StdoutRepeat+1 times, every
	// StdoutRepeatDuration.
	StdoutString         string        `json:"stdout_string"`
	StdoutRepeat         int           `json:"stdout_repeat"`
	StdoutRepeatDuration time.Duration `json:"stdout_repeat_duration"`
	// SignalError makes SignalTask fail with this message.
	SignalError string `json:"signal_error"`
}

// ParseConfig validates a config block; errors wrap drivers.ErrInvalidConfig
// and name the key.
func ParseConfig(m map[string]any) (*TaskConfig, error) {
	c := &TaskConfig{}
	for k, v := range m {
		var err error
		switch k {
		case "run_for":
			c.RunFor, err = duration(v)
		case "start_block_for":
			c.StartBlockFor, err = duration(v)
		case "kill_after":
			c.KillAfter, err = duration(v)
		case "stdout_repeat_duration":
			c.StdoutRepeatDuration, err = duration(v)
		case "exit_code":
			c.ExitCode, err = integer(v)
		case "exit_signal":
			c.ExitSignal, err = integer(v)
		case "stdout_repeat":
			c.StdoutRepeat, err = integer(v)
		case "exit_err_msg":
			c.ExitErrMsg, err = str(v)
		case "start_error":
			c.StartError, err = str(v)
		case "stdout_string":
			c.StdoutString, err = str(v)
		case "signal_error":
			c.SignalError, err = str(v)
		case "oom_killed":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("must be a bool, got %T", v)
			}
			c.OOMKilled = b
		default:
			return nil, fmt.Errorf("%w: unknown key %q", drivers.ErrInvalidConfig, k)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", drivers.ErrInvalidConfig, k, err)
		}
	}
	if c.StdoutRepeat < 0 || c.RunFor < 0 || c.KillAfter < 0 {
		return nil, fmt.Errorf("%w: negative run_for, kill_after or stdout_repeat", drivers.ErrInvalidConfig)
	}
	return c, nil
}

func duration(v any) (time.Duration, error) {
	switch d := v.(type) {
	case string:
		return time.ParseDuration(d)
	case time.Duration:
		return d, nil
	}
	return 0, fmt.Errorf("must be a duration string, got %T", v)
}

func integer(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if float64(int(n)) == n {
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("must be an integer, got %v (%T)", v, v)
}

func str(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("must be a string, got %T", v)
	}
	return s, nil
}
