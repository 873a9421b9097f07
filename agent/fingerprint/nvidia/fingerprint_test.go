package nvidia

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

type simCtor func(SimConfig) (Simulator, error)

// simulators are the Library implementations under test; cgo builds add
// the go-nvml mock based one (see mock_test.go).
var simulators = map[string]simCtor{"pure": NewPureSim}

func forEachSim(t *testing.T, fn func(t *testing.T, ctor simCtor)) {
	for name, ctor := range simulators {
		t.Run(name, func(t *testing.T) { fn(t, ctor) })
	}
}

func newFP(t *testing.T, ctor simCtor, cfg SimConfig) (*Fingerprinter, Simulator) {
	t.Helper()
	sim, err := ctor(cfg)
	if err != nil {
		t.Fatalf("simulator %+v: %v", cfg, err)
	}
	f, err := New(Config{Library: sim, EventWait: 20 * time.Millisecond, HealthInterval: time.Hour})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f, sim
}

func attrStr(a *api.Attribute) string {
	switch {
	case a == nil:
		return "<nil>"
	case a.StringVal != nil:
		return *a.StringVal
	case a.IntVal != nil:
		return strings.TrimSpace(strings.Join([]string{itoa(*a.IntVal), a.Unit}, " "))
	}
	return "?"
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func TestDGXShapes(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		for _, name := range ShapeNames() {
			sh := Shapes[name]
			t.Run(name, func(t *testing.T) {
				f, _ := newFP(t, ctor, SimConfig{Shape: name, NodeID: "node-1"})
				devs := f.Devices()
				if len(devs) != 1 {
					t.Fatalf("got %d device groups, want 1 (one model)", len(devs))
				}
				g := devs[0]
				if g.Vendor != "nvidia" || g.Type != "gpu" || g.Name != sh.Model {
					t.Errorf("group = %s, want nvidia/gpu/%s", g.ID(), sh.Model)
				}
				wantAttrs := map[string]string{
					"memory": itoa(int64(sh.MemoryMiB)) + " MiB", "compute_capability": itoa(int64(sh.CCMajor)) + "." + itoa(int64(sh.CCMinor)),
					"driver_version": sh.Driver, "cuda_version": cudaVersion(sh.CUDA),
				}
				for k, want := range wantAttrs {
					if got := attrStr(g.Attributes[k]); got != want {
						t.Errorf("attribute %s = %q, want %q", k, got, want)
					}
				}
				if len(g.Instances) != 8 {
					t.Fatalf("got %d instances, want 8", len(g.Instances))
				}
				seen := map[string]bool{}
				for i, in := range g.Instances {
					if !strings.HasPrefix(in.ID, "GPU-") || seen[in.ID] {
						t.Errorf("instance %d ID %q: want a distinct GPU- UUID", i, in.ID)
					}
					seen[in.ID] = true
					if !in.Healthy {
						t.Errorf("instance %d unhealthy: %s", i, in.HealthDescription)
					}
					if in.Locality == nil || in.Locality.PciBusID != simBusIDs[i] || in.Locality.NUMANode != i/4 {
						t.Errorf("instance %d locality = %+v, want bus %s numa %d", i, in.Locality, simBusIDs[i], i/4)
					}
					if len(in.Links) != 7 {
						t.Errorf("instance %d has %d links, want 7 (every peer)", i, len(in.Links))
					}
					for peer, l := range in.Links {
						if l.Kind != api.LinkNVLink || l.Level != 0 || l.NVLinks != sh.NVLinks {
							t.Errorf("link %d -> %s = %+v, want nvlink x%d (NVSwitch)", i, peer, l, sh.NVLinks)
						}
					}
				}
			})
		}
	})
}

func TestUUIDsStableAcrossRestarts(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		ids := func(node string) []string {
			f, _ := newFP(t, ctor, SimConfig{Shape: "dgxh100", NodeID: node})
			var out []string
			for _, in := range f.Devices()[0].Instances {
				out = append(out, in.ID)
			}
			return out
		}
		a, b, c := ids("node-a"), ids("node-a"), ids("node-b")
		if strings.Join(a, ",") != strings.Join(b, ",") {
			t.Errorf("UUIDs changed across restarts of the same node:\n%v\n%v", a, b)
		}
		if a[0] == c[0] {
			t.Errorf("two nodes share GPU UUID %s", a[0])
		}
	})
}

func TestMIG(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		for _, name := range ShapeNames() {
			sh := Shapes[name]
			t.Run(name, func(t *testing.T) {
				f, _ := newFP(t, ctor, SimConfig{Shape: name, NodeID: "n", MIG: true})
				devs := f.Devices()
				if len(devs) != 1 {
					t.Fatalf("got %d groups, want 1 MIG group (GPUs in MIG mode are not schedulable whole)", len(devs))
				}
				g := devs[0]
				if g.Type != "mig" || g.Name != sh.Model+" MIG "+sh.MIGProfile {
					t.Errorf("group = %s, want nvidia/mig/%s MIG %s", g.ID(), sh.Model, sh.MIGProfile)
				}
				if got := attrStr(g.Attributes["mig_profile"]); got != sh.MIGProfile {
					t.Errorf("mig_profile = %q, want %q", got, sh.MIGProfile)
				}
				if got, want := attrStr(g.Attributes["memory"]), itoa(int64(sh.MIGMemMiB))+" MiB"; got != want {
					t.Errorf("memory = %q, want %q", got, want)
				}
				if got := attrStr(g.Attributes["parent_model"]); got != sh.Model {
					t.Errorf("parent_model = %q, want %q", got, sh.Model)
				}
				if got, want := len(g.Instances), 8*sh.MIGCount; got != want {
					t.Fatalf("got %d MIG instances, want %d", got, want)
				}
				seen := map[string]bool{}
				for _, in := range g.Instances {
					if !strings.HasPrefix(in.ID, "MIG-") || seen[in.ID] || !in.Healthy {
						t.Errorf("instance %+v: want a distinct healthy MIG- UUID", in)
					}
					seen[in.ID] = true
				}
			})
		}
	})
}

// watch runs f.Watch and returns a channel signalled on each change.
func watch(t *testing.T, f *Fingerprinter) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.Watch(ctx, func() { ch <- struct{}{} })
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ch
}

func TestXIDMarksGPUUnhealthy(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		f, sim := newFP(t, ctor, SimConfig{Shape: "dgxh100", NodeID: "n"})
		changed := watch(t, f)
		sim.InjectXID(2, 31) // application fault: ignored
		sim.InjectXID(3, 79) // fallen off the bus
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no change reported after an XID 79 event")
		}
		for i, in := range f.Devices()[0].Instances {
			if want := i != 3; in.Healthy != want {
				t.Errorf("GPU %d healthy = %v (%s), want %v", i, in.Healthy, in.HealthDescription, want)
			}
			if i == 3 && !strings.Contains(in.HealthDescription, "XID 79") {
				t.Errorf("GPU 3 health description %q, want it to name XID 79", in.HealthDescription)
			}
		}
	})
}

func TestXIDOnMIGParent(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		f, sim := newFP(t, ctor, SimConfig{Shape: "dgxa100", NodeID: "n", MIG: true})
		changed := watch(t, f)
		sim.InjectXID(0, 48) // double-bit ECC XID
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no change reported after an XID 48 event")
		}
		bad := 0
		for _, in := range f.Devices()[0].Instances {
			if !in.Healthy {
				bad++
			}
		}
		if bad != Shapes["dgxa100"].MIGCount {
			t.Errorf("%d MIG instances unhealthy, want the %d of GPU 0", bad, Shapes["dgxa100"].MIGCount)
		}
	})
}

func TestECCErrorsMarkUnhealthy(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		f, sim := newFP(t, ctor, SimConfig{Shape: "dgxb200", NodeID: "n"})
		if f.Refresh() {
			t.Error("Refresh without a change reported a change")
		}
		sim.SetECC(5, 2)
		if !f.Refresh() {
			t.Fatal("Refresh after ECC errors reported no change")
		}
		in := f.Devices()[0].Instances[5]
		if in.Healthy || !strings.Contains(in.HealthDescription, "2 uncorrected ECC errors") {
			t.Errorf("GPU 5 = healthy %v %q, want unhealthy with 2 uncorrected ECC errors", in.Healthy, in.HealthDescription)
		}
	})
}

func TestParseSimSpec(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    SimConfig
		wantErr string
	}{
		{in: "dgxh100", want: SimConfig{Shape: "dgxh100"}},
		{in: "DGXA100:mig", want: SimConfig{Shape: "dgxa100", MIG: true}},
		{in: "dgx1", wantErr: "want one of dgxa100, dgxb200, dgxh100, dgxh200"},
		{in: "dgxh200:foo", wantErr: `unknown option "foo"`},
	} {
		got, err := ParseSimSpec(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSimSpec(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSimSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestLinkKinds(t *testing.T) {
	for _, tc := range []struct {
		in   Link
		want api.DeviceLink
	}{
		{Link{NVLinks: 4, Ancestor: TopoSystem}, api.DeviceLink{Kind: "nvlink", Level: 0, NVLinks: 4}},
		{Link{Ancestor: TopoSingle}, api.DeviceLink{Kind: "pcie-switch", Level: 1}},
		{Link{Ancestor: TopoMultiple}, api.DeviceLink{Kind: "pcie-switch", Level: 1}},
		{Link{Ancestor: TopoHostBridge}, api.DeviceLink{Kind: "pcie-host", Level: 2}},
		{Link{Ancestor: TopoNode}, api.DeviceLink{Kind: "pcie-host", Level: 2}},
		{Link{Ancestor: TopoSystem}, api.DeviceLink{Kind: "system", Level: 3}},
	} {
		if got := DeviceLink(tc.in); got != tc.want {
			t.Errorf("DeviceLink(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestOpenWithoutNVML(t *testing.T) {
	lib, err := Open()
	if err == nil {
		lib.Close()
		t.Skip("this host has NVML")
	}
	if !errors.Is(err, ErrNoNVML) {
		t.Errorf("Open error = %v, want ErrNoNVML", err)
	}
}

func TestSimTopology(t *testing.T) {
	for _, c := range []struct{ name, rack, block string }{
		{"gpu-0", "rack-0", "block-0"},
		{"gpu-3", "rack-0", "block-0"},
		{"gpu-4", "rack-1", "block-0"},
		{"dgx-h100-13", "rack-3", "block-0"},
		{"node32", "rack-8", "block-1"},
		{"laptop", "rack-0", "block-0"},
		{"x99999999999999999999999", "rack-0", "block-0"},
	} {
		got := SimTopology(c.name)
		if got["rack"] != c.rack || got["block"] != c.block || len(got) != 2 {
			t.Errorf("SimTopology(%q) = %v, want rack %s block %s", c.name, got, c.rack, c.block)
		}
	}
}

// outOfOrder are device minors that do not follow NVML's (PCI) order, as
// on hosts where the driver probed the GPUs in another order.
var outOfOrder = &[8]int{5, 3, 7, 1, 0, 2, 6, 4}

// TestMinorsAndDevicePaths: every GPU instance carries the minor NVML
// reports and its device node /dev/nvidia<minor>, whatever its position.
func TestMinorsAndDevicePaths(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		for _, minors := range []*[8]int{nil, outOfOrder} {
			f, _ := newFP(t, ctor, SimConfig{Shape: "dgxh100", NodeID: "n", Minors: minors})
			ins := f.Devices()[0].Instances
			if len(ins) != 8 {
				t.Fatalf("got %d instances, want 8", len(ins))
			}
			for i, in := range ins {
				want := i
				if minors != nil {
					want = minors[i]
				}
				if in.Minor == nil || *in.Minor != want {
					t.Errorf("minors %v: GPU %d minor = %s, want %d", minors, i, minorStr(in.Minor), want)
				}
				if got, wantPaths := strings.Join(in.DevicePaths, ","), "/dev/nvidia"+itoa(int64(want)); got != wantPaths {
					t.Errorf("minors %v: GPU %d device paths = %q, want %q", minors, i, got, wantPaths)
				}
			}
		}
	})
}

// TestMIGDevicePaths: a MIG instance's device nodes are its GPU's node
// and the capability nodes of its GPU instance and compute instance,
// numbered from the GPU's minor, not its position.
func TestMIGDevicePaths(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		sh := Shapes["dgxa100"]
		f, _ := newFP(t, ctor, SimConfig{Shape: "dgxa100", NodeID: "n", MIG: true, Minors: outOfOrder})
		ins := f.Devices()[0].Instances
		if got, want := len(ins), 8*sh.MIGCount; got != want {
			t.Fatalf("got %d MIG instances, want %d", got, want)
		}
		for k, in := range ins {
			gpu, gi := k/sh.MIGCount, k%sh.MIGCount
			m := outOfOrder[gpu]
			if in.Minor == nil || *in.Minor != m {
				t.Errorf("MIG %d (GPU %d) minor = %s, want its GPU's %d", k, gpu, minorStr(in.Minor), m)
			}
			// mig-minors: gpu<m>/gi<gi>/access, then its ci0.
			giCap := 3 + (m*15+gi)*9
			want := []string{"/dev/nvidia" + itoa(int64(m)),
				"/dev/nvidia-caps/nvidia-cap" + itoa(int64(giCap)), "/dev/nvidia-caps/nvidia-cap" + itoa(int64(giCap+1))}
			if got := strings.Join(in.DevicePaths, ","); got != strings.Join(want, ",") {
				t.Errorf("MIG %d (GPU %d gi %d) device paths = %q, want %q", k, gpu, gi, got, strings.Join(want, ","))
			}
		}
	})
}

// TestNoMinorNoDevicePaths: a GPU whose minor NVML did not give gets no
// device node rather than one guessed from its position.
func TestNoMinorNoDevicePaths(t *testing.T) {
	sys := &System{GPUs: []GPU{{Index: 0, Minor: -1, UUID: "GPU-a", Name: "X"}, {Index: 1, Minor: 4, UUID: "GPU-b", Name: "X"}}}
	ins := BuildDevices(sys, nil)[0].Instances
	if ins[0].Minor != nil || ins[0].DevicePaths != nil {
		t.Errorf("GPU without a minor: minor %s paths %v, want none", minorStr(ins[0].Minor), ins[0].DevicePaths)
	}
	if ins[1].Minor == nil || *ins[1].Minor != 4 || strings.Join(ins[1].DevicePaths, ",") != "/dev/nvidia4" {
		t.Errorf("GPU with minor 4: minor %s paths %v, want 4 and /dev/nvidia4", minorStr(ins[1].Minor), ins[1].DevicePaths)
	}
}

// TestMIGMinorsFile: the host's mig-minors file is read as the driver
// writes it, and the simulators' numbering matches the driver's layout.
func TestMIGMinorsFile(t *testing.T) {
	file := "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/ci1/access 5\n" +
		"gpu3/gi3/access 435\ngpu3/gi3/ci3/access 439\ngpu6/gi11/access 912\ngpu6/gi11/ci7/access 920\n" +
		"garbage\ngpu31/gi14/access 4314\ngpu31/gi14/ci7/access 4322\n"
	caps, err := parseMIGMinors(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ gpu, gi, ci, giCap, ciCap int }{
		{0, 0, 0, 3, 4}, {0, 0, 1, 3, 5}, {3, 3, 3, 435, 439}, {6, 11, 7, 912, 920}, {31, 14, 7, 4314, 4322},
	} {
		g, ci := caps(c.gpu, c.gi, c.ci)
		if g != c.giCap || ci != c.ciCap {
			t.Errorf("file: gpu%d/gi%d/ci%d = %d, %d; want %d, %d", c.gpu, c.gi, c.ci, g, ci, c.giCap, c.ciCap)
		}
		if g, ci := driverMIGCaps(c.gpu, c.gi, c.ci); g != c.giCap || ci != c.ciCap {
			t.Errorf("driver numbering: gpu%d/gi%d/ci%d = %d, %d; want %d, %d", c.gpu, c.gi, c.ci, g, ci, c.giCap, c.ciCap)
		}
	}
	if g, ci := caps(1, 0, 0); g != 0 || ci != 0 {
		t.Errorf("entry not in the file = %d, %d; want 0, 0", g, ci)
	}
	if g, ci := driverMIGCaps(32, 0, 0); g != 0 || ci != 0 {
		t.Errorf("driver numbering past 32 GPUs = %d, %d; want 0, 0", g, ci)
	}
}

func minorStr(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return itoa(int64(*p))
}
