package scheduler

import (
	"testing"

	"github.com/drover/drover/api"
)

func TestConstraintOperators(t *testing.T) {
	n := testNode("n1", "dc1", 4000, 8192)
	n.NodeClass = "compute"
	n.NodePool = "batch"
	n.Attributes["kernel.version"] = "6.1.0"
	n.Attributes["cpu.numcores"] = "16"
	n.Attributes["os.name"] = "debian"
	n.Meta["tags"] = "ssd, gpu,fast"
	n.Meta["semver"] = "1.2.3"
	cases := []struct {
		l, op, r string
		want     bool
	}{
		{"${attr.kernel.name}", "=", "linux", true},
		{"${attr.kernel.name}", "==", "linux", true},
		{"${attr.kernel.name}", "is", "windows", false},
		{"${attr.kernel.name}", "!=", "windows", true},
		{"${attr.kernel.name}", "not", "linux", false},
		{"${attr.cpu.numcores}", ">", "8", true}, // numeric: 16 > 8
		{"${attr.cpu.numcores}", "<", "8", false},
		{"${attr.cpu.numcores}", ">=", "16", true},
		{"${attr.cpu.numcores}", "<=", "15", false},
		{"${attr.os.name}", "<", "fedora", true}, // lexical
		{"${attr.os.name}", ">", "fedora", false},
		{"${attr.os.name}", "regexp", "^deb", true},
		{"${attr.os.name}", "regexp", "^ubu", false},
		{"${attr.os.name}", "regexp", "([", false}, // bad pattern matches nothing
		{"${attr.kernel.version}", "version", ">= 5.10, < 7", true},
		{"${attr.kernel.version}", "version", "< 6.0", false},
		{"${meta.semver}", "semver", "~> 1.2", true},
		{"${meta.semver}", "semver", ">= 2.0.0", false},
		{"${meta.tags}", "set_contains", "ssd,gpu", true},
		{"${meta.tags}", "set_contains_all", "ssd,nvme", false},
		{"${meta.tags}", "set_contains_any", "nvme,fast", true},
		{"${meta.tags}", "set_contains_any", "nvme,hdd", false},
		{"${meta.tags}", "is_set", "", true},
		{"${meta.missing}", "is_set", "", false},
		{"${meta.missing}", "is_not_set", "", true},
		{"${meta.missing}", "=", "", false}, // unresolved never matches
		{"${node.unique.id}", "=", "node-n1", true},
		{"${node.unique.name}", "=", "n1", true},
		{"${node.datacenter}", "=", "dc1", true},
		{"${node.class}", "=", "compute", true},
		{"${node.pool}", "=", "batch", true},
		{"${attr.unique.network.ip-address}", "regexp", `^10\.`, true},
	}
	m := &matcher{}
	for _, c := range cases {
		got := m.constraintOK(&api.Constraint{LTarget: c.l, Operand: c.op, RTarget: c.r}, n)
		if got != c.want {
			t.Errorf("%s %s %q = %v, want %v", c.l, c.op, c.r, got, c.want)
		}
	}
}

func TestDeviceAttributeUnits(t *testing.T) {
	m := &matcher{}
	mem := &api.Attribute{IntVal: i64(81920), Unit: "MiB"}
	cc := &api.Attribute{StringVal: str("8.0")}
	cases := []struct {
		a    *api.Attribute
		op   string
		r    string
		want bool
	}{
		{mem, ">=", "40 GiB", true},
		{mem, ">=", "80 GiB", true},
		{mem, ">", "80 GiB", false},
		{mem, "<", "100GB", true},
		{mem, "=", "81920", true}, // bare number: the attribute's unit
		{mem, ">", "1 TiB", false},
		{cc, ">=", "7.5", true},
		{cc, ">=", "8.0", true},
		{cc, ">=", "10.0", false}, // version order, not lexical
		{cc, "<", "9.0", true},
		{nil, "is_not_set", "", true},
		{mem, "is_set", "", true},
	}
	for _, c := range cases {
		if got := m.checkDeviceAttr(c.op, c.a, c.r); got != c.want {
			t.Errorf("attr %v %s %q = %v, want %v", c.a, c.op, c.r, got, c.want)
		}
	}
}

func TestPoolMatch(t *testing.T) {
	if !poolMatch("all", "gpu") || !poolMatch("", "default") || poolMatch("default", "gpu") {
		t.Error("pool matching wrong")
	}
}

func TestClassCacheAndComputedClass(t *testing.T) {
	a := testNode("a", "dc1", 4000, 8192)
	b := testNode("b", "dc1", 4000, 8192) // differs only in unique attributes
	c := testNode("c", "dc1", 4000, 8192)
	c.Attributes["kernel.name"] = "windows"
	if computedClass(a) != computedClass(b) {
		t.Error("nodes differing only in unique.* attributes got different classes")
	}
	if computedClass(a) == computedClass(c) {
		t.Error("nodes with different attributes share a class")
	}
	st := newMemState()
	for _, n := range []*api.Node{a, b, c} {
		st.addNode(n)
	}
	job := testJob("j", api.JobTypeService, 3, 100, 64)
	job.Constraints = []*api.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	job.TaskGroups[0].Constraints = []*api.Constraint{{Operand: api.ConstraintDistinctHosts}}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, SampleLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["${attr.kernel.name} = linux"] != 1 || m.ClassFiltered[computedClass(c)] != 1 {
		t.Fatalf("metric = %+v, want one node filtered by class", m)
	}
	if got, want := res.Blocked.ClassEligibility, map[string]bool{computedClass(a): true, computedClass(c): false}; len(got) != 2 || got[computedClass(a)] != true || got[computedClass(c)] != false {
		t.Errorf("ClassEligibility = %v, want %v", got, want)
	}
	if res.Eval.QueuedAllocations["web"] != 1 || res.Eval.BlockedEval != res.Blocked.ID || res.Blocked.Status != api.EvalStatusBlocked {
		t.Errorf("eval = %+v, blocked = %+v", res.Eval, res.Blocked)
	}
}

// A group with a host volume is placed only on nodes offering it, and a
// writable request only on nodes offering it writable; nodes without it
// are filtered by class with Nomad's reason.
func TestHostVolumeFeasibility(t *testing.T) {
	none := testNode("none", "dc1", 4000, 8192)
	ro := testNode("ro", "dc1", 4000, 8192)
	ro.HostVolumes = map[string]*api.ClientHostVolumeConfig{"models": {Name: "models", Path: "/srv/m", ReadOnly: true}}
	rw := testNode("rw", "dc1", 4000, 8192)
	rw.HostVolumes = map[string]*api.ClientHostVolumeConfig{"models": {Name: "models", Path: "/srv/m"}}
	if computedClass(none) == computedClass(ro) || computedClass(ro) == computedClass(rw) {
		t.Fatal("host volumes are not part of the computed class")
	}
	for _, c := range []struct {
		readOnly bool
		want     map[string]bool
	}{{true, map[string]bool{"node-ro": true, "node-rw": true}}, {false, map[string]bool{"node-rw": true}}} {
		st := newMemState()
		for _, n := range []*api.Node{none, ro, rw} {
			st.addNode(n.Copy())
		}
		job := testJob("j", api.JobTypeBatch, 4, 100, 64)
		job.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"m": {Name: "m", Type: api.VolumeTypeHost, Source: "models", ReadOnly: c.readOnly}}
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, SampleLimit: -1})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, a := range res.Plan.NodeAllocation {
			for _, x := range a {
				got[x.NodeID] = true
			}
		}
		if len(got) == 0 || len(got) > len(c.want) {
			t.Fatalf("read_only=%v: placed on %v, want within %v", c.readOnly, got, c.want)
		}
		for n := range got {
			if !c.want[n] {
				t.Errorf("read_only=%v: placed on %s, want only %v", c.readOnly, n, c.want)
			}
		}
	}
	st := newMemState()
	st.addNode(none.Copy())
	job := testJob("j", api.JobTypeBatch, 1, 100, 64)
	job.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"m": {Name: "m", Type: api.VolumeTypeHost, Source: "models"}}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, SampleLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Eval.FailedTGAllocs[job.TaskGroups[0].Name]
	if m == nil || m.ConstraintFiltered["missing compatible host volumes"] != 1 {
		t.Fatalf("metric = %+v, want the node filtered for its missing host volume", m)
	}
}

// A bridge group goes only to nodes that can build bridge networks.
func TestBridgeNetworkFeasibility(t *testing.T) {
	plain := testNode("plain", "dc1", 4000, 8192)
	cni := testNode("cni", "dc1", 4000, 8192)
	cni.Attributes[api.AttrBridgeNetwork] = "true"
	st := newMemState()
	st.addNode(plain)
	st.addNode(cni)
	job := testJob("j", api.JobTypeBatch, 3, 100, 64)
	job.TaskGroups[0].Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, SampleLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for node, as := range res.Plan.NodeAllocation {
		if node != cni.ID {
			t.Errorf("placed on %s, which has no bridge networking", node)
		}
		n += len(as)
	}
	if n != 3 {
		t.Errorf("%d placed, want 3", n)
	}
	if m := res.Eval.FailedTGAllocs; len(m) != 0 {
		t.Errorf("failed groups %+v", m)
	}
}
