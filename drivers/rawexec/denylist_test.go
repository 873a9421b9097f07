package rawexec

import (
	"strings"
	"testing"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/logging"
)

// user.denylist applies to exec only, as in Nomad: raw_exec runs a task
// with user = "root" under the default list.
func TestUserDenylistDoesNotApply(t *testing.T) {
	drivertest.NeedRoot(t)
	d, err := New(drivers.Options{Config: map[string]any{"executor_path": droverBin}, DataDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := drivertest.NewTaskConfig(t, "who", map[string]any{"command": "/bin/sh", "args": []any{"-c", "id -un"}})
	cfg.User = "root"
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID); !res.Successful() {
		t.Fatalf("exit %+v", res)
	}
	out, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
	if err != nil || strings.TrimSpace(string(out)) != "root" {
		t.Errorf("output %q, %v; want it to run as root", out, err)
	}
}
