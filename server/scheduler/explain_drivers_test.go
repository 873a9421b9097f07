package scheduler

import (
	"testing"

	"github.com/drover/drover/api"
)

// A group whose driver no node can run says which driver and why: the
// fingerprint's health description for a node where it is unhealthy,
// the drivers the nodes have for a name none has (a typo), instead of
// only the "missing drivers" constraint.
func TestDriverReasons(t *testing.T) {
	const socketGone = "containerd socket /run/containerd/containerd.sock not found"
	tests := []struct {
		name, driver string
		nodes        func() []*api.Node
		want         string
	}{{
		name: "unhealthy", driver: "containerd",
		nodes: func() []*api.Node {
			n := testNode("a", "dc1", 4000, 4096)
			n.Drivers["containerd"] = &api.DriverInfo{Detected: true, HealthDescription: socketGone}
			return []*api.Node{n}
		},
		want: `driver "containerd" is not healthy on 1 node: ` + socketGone,
	}, {
		name: "mixed", driver: "qemu",
		nodes: func() []*api.Node {
			a, b, c := testNode("a", "dc1", 4000, 4096), testNode("b", "dc1", 4000, 4096), testNode("c", "dc1", 4000, 4096)
			a.Drivers["qemu"] = &api.DriverInfo{HealthDescription: "qemu-system-x86_64 not found"}
			b.Drivers["qemu"] = &api.DriverInfo{Detected: true, HealthDescription: "no /dev/kvm"}
			return []*api.Node{a, b, c}
		},
		want: `driver "qemu" is not healthy on 1 node, not detected on 1 node, missing on 1 node: ` +
			`no /dev/kvm (1 node); qemu-system-x86_64 not found (1 node)`,
	}, {
		name: "typo", driver: "dokcer",
		nodes: func() []*api.Node {
			return []*api.Node{testNode("a", "dc1", 4000, 4096), testNode("b", "dc1", 4000, 4096)}
		},
		want: `no node has driver "dokcer" (drivers on the nodes: exec, raw_exec)`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newMemState()
			for _, n := range tt.nodes() {
				st.addNode(n)
			}
			job := testJob("web", api.JobTypeService, 1, 100, 64)
			job.TaskGroups[0].Tasks[0].Driver = tt.driver
			st.upsertJob(job)
			res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Eval.FailedTGAllocs["web"]
			if m == nil {
				t.Fatal("placed, want a failure")
			}
			if m.ConstraintFiltered[missingDrivers] == 0 {
				t.Errorf("ConstraintFiltered = %v, want the Nomad counter kept", m.ConstraintFiltered)
			}
			var got []string
			for _, r := range m.Reasons {
				if r.Kind == api.PendingConstraint && r.Constraint == missingDrivers {
					t.Errorf("bare constraint reason %q kept beside the driver reason", r.Message)
				}
				if r.Kind == api.PendingDriver {
					if r.Driver != tt.driver {
						t.Errorf("reason driver = %q, want %q", r.Driver, tt.driver)
					}
					got = append(got, r.Message)
				}
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("driver reasons = %q, want [%q]", got, tt.want)
			}
		})
	}
}
