package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSupervisorRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.json")
	if err := os.WriteFile(p, []byte(`{"command":"/bin/true"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfig(p); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("readConfig(incomplete) = %v", err)
	}
	if code := Main(nil, nil); code != 2 {
		t.Errorf("Main(no args) = %d, want 2", code)
	}
}

func TestCgroupWrites(t *testing.T) {
	c := &CgroupConfig{Name: "x", CPUShares: 500, ReservedCores: []uint16{1, 3}, MemoryMB: 100, MemoryMaxMB: 200, PidsLimit: 64}
	str := func(ws []cgWrite) string {
		var b strings.Builder
		for _, w := range ws {
			fmt.Fprintf(&b, "%s/%s=%s\n", w.ctrl, w.file, w.value)
		}
		return b.String()
	}
	for _, tc := range []struct {
		v2   bool
		want string
	}{
		{false, `cpu/cpu.shares=500
cpu/cpu.cfs_period_us=100000
cpu/cpu.cfs_quota_us=200000
cpuset/cpuset.cpus=1,3
memory/memory.limit_in_bytes=209715200
memory/memory.soft_limit_in_bytes=104857600
memory/memory.memsw.limit_in_bytes=209715200
pids/pids.max=64
`},
		{true, `cpu/cpu.weight=19
cpu/cpu.max=200000 100000
cpuset/cpuset.cpus=1,3
memory/memory.max=209715200
memory/memory.low=104857600
memory/memory.swap.max=0
pids/pids.max=64
`},
	} {
		if diff := cmp.Diff(tc.want, str(c.writes(tc.v2))); diff != "" {
			t.Errorf("writes(v2=%v) (-want +got):\n%s", tc.v2, diff)
		}
	}
	got := str((&CgroupConfig{Name: "y", MemoryMB: 64}).writes(false))
	if want := "memory/memory.limit_in_bytes=67108864\nmemory/memory.memsw.limit_in_bytes=67108864\n"; got != want {
		t.Errorf("memory-only writes = %q, want %q", got, want)
	}
	// memory_max = -1: no ceiling, memory is the soft reservation.
	unl := &CgroupConfig{Name: "u", MemoryMB: 64, MemoryMaxMB: -1}
	if got, want := str(unl.writes(false)), "memory/memory.limit_in_bytes=-1\nmemory/memory.soft_limit_in_bytes=67108864\n"; got != want {
		t.Errorf("unlimited v1 writes = %q, want %q", got, want)
	}
	if got, want := str(unl.writes(true)), "memory/memory.max=max\nmemory/memory.low=67108864\nmemory/memory.swap.max=0\n"; got != want {
		t.Errorf("unlimited v2 writes = %q, want %q", got, want)
	}
	if got := CgroupName("a1/web/ff.0"); got != "a1_web_ff_0" {
		t.Errorf("CgroupName = %q", got)
	}
}

func TestDeviceRules(t *testing.T) {
	ws := (&CgroupConfig{Name: "d", RestrictDevices: true, Devices: []Device{{HostPath: "/dev/null", Permissions: "r"}, {HostPath: "/no/such/dev"}}}).writes(false)
	if len(ws) < 2 || ws[0] != (cgWrite{"devices", "devices.deny", "a *:* rwm"}) {
		t.Fatalf("first write = %+v, want deny all", ws)
	}
	if last := ws[len(ws)-1]; last != (cgWrite{"devices", "devices.allow", "c 1:3 r"}) {
		t.Errorf("last write = %+v, want allow c 1:3 r", last)
	}
	if ws := (&CgroupConfig{Name: "d", RestrictDevices: true}).writes(true); len(ws) != 0 {
		t.Errorf("v2 device writes = %+v, want none (no eBPF allow-list)", ws)
	}
}

// TestSupervisorBinaryStaysSmall: drover-executor links only the standard
// library, golang.org/x/sys and drover's own supervisor and log writer:
// every other module would add its package initialisation to the memory
// of each task's supervisor.
func TestSupervisorBinaryStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/drover/drover/drivers/executor/cmd/drover-executor").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/drover/drover/drivers/executor/cmd/drover-executor": true,
		"github.com/drover/drover/drivers/executor/supervisor":          true,
		"github.com/drover/drover/drivers/logging":                      true,
		"golang.org/x/sys/unix":                                         true,
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("drover-executor imports %s", p)
		}
	}
}
