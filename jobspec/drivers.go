package jobspec

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Drivers are the task drivers drover runs (agent.Drivers, checked by
// the agent's tests), by the name job files use.
var Drivers = []string{"containerd", "exec", "qemu", "raw_exec"}

// testDrivers are accepted without a word: the mock driver of drover's
// tests and the simulated nodes' driver (drover sim).
var testDrivers = []string{"mock_driver", "mock"}

// nomadDrivers are Nomad's task drivers (built in and community plugins)
// that drover does not run: a job using one is what Nomad would accept,
// so it is a warning, not an error (Nomad leaves it to the clients too).
var nomadDrivers = []string{"docker", "podman", "java", "exec2", "containerd-driver", "nspawn", "lxc",
	"singularity", "pot", "jail-task-driver", "firecracker-task-driver", "iis", "win_iis", "virt", "rkt",
	"pledge", "ecs"}

// checkDriver warns of a task's driver name that drover cannot run: one of
// Nomad's drivers, or any other name (a typo, or a plugin no drover client
// has), naming drover's drivers and the closest known name. Nomad accepts
// any driver name at registration, so neither is an error; the warning is
// what keeps a typo from leaving the job pending with only "missing
// drivers" to say why.
func (d *decoder) checkDriver(a *hcl.Attribute, task, name string) {
	switch {
	case slices.Contains(Drivers, name) || slices.Contains(testDrivers, name):
	case slices.Contains(nomadDrivers, name):
		hint := ""
		if name == "docker" || name == "podman" {
			hint = "; containerd runs the same OCI images"
		}
		d.warnf(a.Expr.Range(), "drover does not run driver %q (its drivers: %s%s): task %q is accepted but will not be placed",
			name, strings.Join(Drivers, ", "), hint, task)
	default:
		msg := "unknown driver %q (drover's drivers: %s)"
		if s := suggestDriver(name); s != "" {
			msg += `; did you mean "` + s + `"?`
		}
		d.warnf(a.Expr.Range(), msg+": task %q is accepted but no drover client will run it", name, strings.Join(Drivers, ", "), task)
	}
}

// suggestDriver is the known driver name closest to name, within two
// edits, or "".
func suggestDriver(name string) string {
	best, bestD := "", 3
	for _, k := range slices.Concat(Drivers, nomadDrivers) {
		if dist := editDistance(strings.ToLower(name), k); dist < bestD {
			best, bestD = k, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (short names only).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
