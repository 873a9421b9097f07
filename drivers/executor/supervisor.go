package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/drivers/executor/supervisor"
)

// The supervisor's side of the contract lives in package supervisor (so
// that the small drover-executor binary links nothing else); these names
// keep the driver-side API of this package whole.
type (
	// Config is what the driver hands the supervisor (as a JSON file).
	Config = supervisor.Config
	// Isolation settings of the exec driver.
	Isolation = supervisor.Isolation
	// Mount is a bind mount into the chroot.
	Mount = supervisor.Mount
	// Device is a device node exposed to the task.
	Device = supervisor.Device
	// CgroupConfig are the task's cgroup and limits.
	CgroupConfig = supervisor.CgroupConfig
	// Result is the exit-status file's content.
	Result = supervisor.Result
)

// DefaultCaps is the capability bounding set of exec tasks.
var DefaultCaps = supervisor.DefaultCaps

// Functions of package supervisor the drivers use.
var (
	DefaultCapMask = supervisor.DefaultCapMask
	CgroupsV2      = supervisor.CgroupsV2
	CgroupsUsable  = supervisor.CgroupsUsable
	CgroupDir      = supervisor.CgroupDir
	CgroupName     = supervisor.CgroupName
	CgroupPids     = supervisor.CgroupPids
	KillCgroup     = supervisor.KillCgroup
	DeleteCgroup   = supervisor.DeleteCgroup
	OOMKilled      = supervisor.OOMKilled
)

// HelperName is the small supervisor binary (built from
// drivers/executor/cmd/drover-executor) that the drivers look for.
const HelperName = "drover-executor"

// Supervisor is the command that runs a task supervisor.
type Supervisor struct {
	// Path of the binary.
	Path string
	// Args come before the supervisor's own arguments: ["executor"] for
	// the drover binary, none for drover-executor.
	Args []string
}

// FindSupervisor picks the supervisor for bin, the plugin config's
// executor_path or else the running drover binary: bin itself when it is
// a drover-executor; else the drover-executor next to bin when there is
// one and it speaks this drover's supervisor.Protocol (one left over from
// another version is not used); else `bin executor` (the whole drover
// binary, always complete).
func FindSupervisor(bin string) Supervisor {
	if filepath.Base(bin) == HelperName {
		return Supervisor{Path: bin}
	}
	helper := filepath.Join(filepath.Dir(bin), HelperName)
	if st, err := os.Stat(helper); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 && speaksProtocol(helper, st) {
		return Supervisor{Path: helper}
	}
	return Supervisor{Path: bin, Args: []string{"executor"}}
}

// helperCheck is a drover-executor binary as checked (path, size, mtime).
type helperCheck struct {
	path  string
	size  int64
	mtime time.Time
}

// checkedHelpers caches speaksProtocol per helperCheck: one run of
// `drover-executor --protocol` per binary, not per task.
var checkedHelpers sync.Map // helperCheck -> bool

func speaksProtocol(path string, st os.FileInfo) bool {
	key := helperCheck{path, st.Size(), st.ModTime()}
	if ok, found := checkedHelpers.Load(key); found {
		return ok.(bool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--protocol").Output()
	ok := err == nil && strings.TrimSpace(string(out)) == supervisor.Protocol
	checkedHelpers.Store(key, ok)
	return ok
}

// ReadResult reads an exit-status file; os.ErrNotExist when absent.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode exit status %s: %w", path, err)
	}
	return &r, nil
}

// writeJSONAtomic writes v as JSON to path via a temp file and rename.
func writeJSONAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return supervisor.WriteFileAtomic(path, b)
}

// command is the supervisor's argv after its path, for args.
func (s Supervisor) command(args ...string) []string {
	return append(append([]string(nil), s.Args...), args...)
}
