package autoscale

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// The local provider's agent config is valid HCL with the pool, servers
// and meta.
func TestLocalConfig(t *testing.T) {
	src := localConfig("local-gpu-1", "gpu", Shape{Datacenter: "dc1", Spot: true}, []string{"127.0.0.1:4646"})
	if _, diags := hclparse.NewParser().ParseHCL([]byte(src), "agent.hcl"); diags.HasErrors() {
		t.Fatalf("%s\n%v", src, diags)
	}
	for _, want := range []string{`node_pool = "gpu"`, `servers = ["127.0.0.1:4646"]`, `"drover.instance" = "local-gpu-1"`, `"drover.spot" = "true"`, `datacenter = "dc1"`, `plugin "raw_exec"`} {
		if !strings.Contains(src, want) {
			t.Errorf("config lacks %s:\n%s", want, src)
		}
	}
}
