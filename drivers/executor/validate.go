package executor

import (
	"fmt"

	"github.com/drover/drover/drivers"
)

// TaskOptions is a validated exec/raw_exec task config block.
type TaskOptions struct {
	Command string
	Args    []string
	PIDMode string // "private" (default) or "host"
	IPCMode string
}

// ParseTaskConfig checks a task's config block: command (string,
// required), args (list of strings), pid_mode and ipc_mode ("private" or
// "host"). Errors wrap drivers.ErrInvalidConfig and name the key.
func ParseTaskConfig(cfg map[string]any) (*TaskOptions, error) {
	o := &TaskOptions{}
	for k, v := range cfg {
		switch k {
		case "command":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %q must be a string, got %T", drivers.ErrInvalidConfig, k, v)
			}
			o.Command = s
		case "args":
			args, err := drivers.StringList(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: %v", drivers.ErrInvalidConfig, k, err)
			}
			o.Args = args
		case "pid_mode", "ipc_mode":
			s, ok := v.(string)
			if !ok || (s != "" && s != "private" && s != "host") {
				return nil, fmt.Errorf("%w: %q must be \"private\" or \"host\", got %v", drivers.ErrInvalidConfig, k, v)
			}
			if k == "pid_mode" {
				o.PIDMode = s
			} else {
				o.IPCMode = s
			}
		default:
			return nil, fmt.Errorf("%w: unknown key %q", drivers.ErrInvalidConfig, k)
		}
	}
	if o.Command == "" {
		return nil, fmt.Errorf("%w: %q is required", drivers.ErrInvalidConfig, "command")
	}
	return o, nil
}
