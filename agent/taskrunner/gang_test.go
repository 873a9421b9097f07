package taskrunner

import (
	"testing"

	"github.com/drover/drover/api"
)

// testGangAlloc is member 1 of a two-member gang whose leader listens on
// 10.0.0.5:29500; the member's own rendezvous port is drover_gang.
func testGangAlloc() (*api.Allocation, *api.Task, *api.Node) {
	a, tk, n := testAlloc()
	a.Gang = &api.AllocGang{ID: "api", Size: 2, Rank: 1, LeaderAddr: "10.0.0.5:29500", Members: []api.GangMember{
		{Rank: 0, AllocID: "a0", Name: "shop.api[0]", NodeID: "node-0", Address: "10.0.0.5"},
		{Rank: 1, AllocID: a.ID, Name: a.Name, NodeID: "node-1", Address: "10.0.0.6"},
	}}
	a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports,
		api.AllocatedPort{Label: api.GangPortLabel, Value: 29501, HostIP: "10.0.0.6"})
	return a, tk, n
}

func TestBuildEnvGang(t *testing.T) {
	a, tk, n := testGangAlloc()
	tk.Env = map[string]string{"LEADER": "${DROVER_GANG_LEADER_ADDR}", "ME": "rank-${DROVER_GANG_RANK}-of-${DROVER_GANG_SIZE}"}
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: HostDirs("/data/alloc/x", "web")})
	want := map[string]string{
		"DROVER_GANG_ID": "api", "DROVER_GANG_SIZE": "2", "DROVER_GANG_RANK": "1",
		"DROVER_GANG_LEADER_ADDR": "10.0.0.5:29500",
		"DROVER_GANG_HOSTS":       "/data/alloc/x/alloc/gang/hosts",
		"DROVER_GANG_HOSTFILE":    "/data/alloc/x/alloc/gang/hostfile",
		"MASTER_ADDR":             "10.0.0.5", "MASTER_PORT": "29500", "WORLD_SIZE": "2", "RANK": "1",
		"NOMAD_PORT_drover_gang": "29501", "DROVER_ADDR_drover_gang": "10.0.0.6:29501",
		"LEADER": "10.0.0.5:29500", "ME": "rank-1-of-2",
	}
	for k, v := range want {
		if got := env[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got := Interpolate("--rank=${DROVER_GANG_RANK}", env, n); got != "--rank=1" {
		t.Errorf("interpolated config = %q, want --rank=1", got)
	}
	mounted := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: MountedDirs()})
	if got := mounted["DROVER_GANG_HOSTS"]; got != "/alloc/gang/hosts" {
		t.Errorf("mounted DROVER_GANG_HOSTS = %q, want /alloc/gang/hosts", got)
	}
}

// The job's env wins over the torch.distributed defaults.
func TestBuildEnvGangJobOverrides(t *testing.T) {
	a, tk, n := testGangAlloc()
	tk.Env = map[string]string{"MASTER_PORT": "1234", "RANK": "${DROVER_GANG_RANK}0", "WORLD_SIZE": "16"}
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: HostDirs("/d", "web")})
	for k, v := range map[string]string{"MASTER_PORT": "1234", "RANK": "10", "WORLD_SIZE": "16", "MASTER_ADDR": "10.0.0.5"} {
		if got := env[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestBuildEnvNoGang(t *testing.T) {
	a, tk, n := testAlloc()
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: HostDirs("/d", "web")})
	for _, k := range []string{"DROVER_GANG_ID", "DROVER_GANG_RANK", "DROVER_GANG_HOSTS", "MASTER_ADDR", "WORLD_SIZE", "RANK"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q without a gang, want unset", k, v)
		}
	}
	// A gang without a leader address (not yet known) still gets rank and size.
	a.Gang = &api.AllocGang{ID: "job", Size: 3, Rank: 0}
	env = BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: HostDirs("/d", "web")})
	if env["DROVER_GANG_RANK"] != "0" || env["DROVER_GANG_SIZE"] != "3" {
		t.Errorf("rank/size = %q/%q, want 0/3", env["DROVER_GANG_RANK"], env["DROVER_GANG_SIZE"])
	}
	if v, ok := env["MASTER_ADDR"]; ok {
		t.Errorf("MASTER_ADDR = %q without a leader address, want unset", v)
	}
}
