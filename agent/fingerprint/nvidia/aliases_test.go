package nvidia

import "testing"

// Every simulated server's GPU and MIG groups carry the model's short
// names, and asks by those names (and MIG profile) match them; a plain
// GPU ask never matches a MIG group.
func TestModelAliases(t *testing.T) {
	want := map[string]string{
		"dgxa100": "A100,A100-SXM4,A100-40GB,A100-SXM4-40GB",
		"dgxh100": "H100,H100-80GB",
		"dgxh200": "H200,H200-141GB",
		"dgxb200": "B200,B200-180GB",
	}
	short := map[string]string{"dgxa100": "A100", "dgxh100": "H100", "dgxh200": "H200", "dgxb200": "B200"}
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		for _, name := range ShapeNames() {
			sh := Shapes[name]
			t.Run(name, func(t *testing.T) {
				f, _ := newFP(t, ctor, SimConfig{Shape: name, NodeID: "n"})
				g := f.Devices()[0]
				if got := attrStr(g.Attributes[AttrAliases]); got != want[name] {
					t.Errorf("aliases = %q, want %q", got, want[name])
				}
				if !g.Matches("nvidia/gpu/"+short[name]) || !g.Matches("nvidia/gpu") {
					t.Errorf("%s does not match nvidia/gpu/%s or nvidia/gpu", g.ID(), short[name])
				}

				f, _ = newFP(t, ctor, SimConfig{Shape: name, NodeID: "n", MIG: true})
				m := f.Devices()[0]
				wantMIG := sh.MIGProfile + "," + short[name] + " MIG " + sh.MIGProfile
				if got := attrStr(m.Attributes[AttrAliases]); len(got) < len(wantMIG) || got[:len(wantMIG)] != wantMIG {
					t.Errorf("MIG aliases = %q, want them to start %q", got, wantMIG)
				}
				for ask, ok := range map[string]bool{"nvidia/gpu/" + sh.MIGProfile: true, "nvidia/mig": true,
					"nvidia/mig/" + m.Name: true, "nvidia/gpu/" + short[name] + " MIG " + sh.MIGProfile: true,
					"nvidia/gpu": false, "gpu": false, "nvidia/gpu/" + short[name]: false} {
					if m.Matches(ask) != ok {
						t.Errorf("MIG group %s: Matches(%q) = %v, want %v", m.ID(), ask, !ok, ok)
					}
				}
			})
		}
	})
}
