package config

import (
	"errors"
	"testing"
	"time"
)

func TestClusterSettings(t *testing.T) {
	src := `
server {
  enabled           = true
  bootstrap_expect  = 3
  encrypt           = "cg8StVXbQJ0gPvMd9o7yrg=="
  dead_server_grace = "45s"
  server_stabilization_time = "5s"
  server_join {
    retry_join = ["10.0.0.1:4648", "10.0.0.2:4648"]
  }
}
data_dir = "/var/lib/drover"
leave_on_terminate = true
`
	c, err := Parse([]byte(src), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got, want := c.Server.DeadServerGrace, 45*time.Second; got != want {
		t.Errorf("DeadServerGrace = %v, want %v", got, want)
	}
	if got, want := c.Server.ServerStabilization, 5*time.Second; got != want {
		t.Errorf("ServerStabilization = %v, want %v", got, want)
	}
	if got := c.Join; len(got) != 2 || got[0] != "10.0.0.1:4648" {
		t.Errorf("Join = %v, want the two retry_join addresses", got)
	}
	if c.Server.Encrypt == "" || c.Server.BootstrapExpect != 3 || !c.Server.LeaveOnTerminate {
		t.Errorf("server = %+v", c.Server)
	}

	legacy, err := Parse([]byte(`server { retry_join = ["10.0.0.3:4648"] }`), "agent.hcl", nil)
	if err != nil || len(legacy.Join) != 1 || legacy.Join[0] != "10.0.0.3:4648" {
		t.Errorf("server.retry_join: %v %v, want the address in Join", err, legacy)
	}
	for name, bad := range map[string]string{
		"duration": `server { dead_server_grace = "soon" }`,
		"negative": `server { server_stabilization_time = "-1s" }`,
	} {
		if _, err := Parse([]byte(bad), "agent.hcl", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse = %v, want ErrInvalid", name, err)
		}
	}
	for _, key := range []string{"not base64!", "c2hvcnQ="} {
		c := Default()
		c.Server.Enabled, c.DataDir, c.Server.Encrypt = true, "/d", key
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("encrypt %q: Validate = %v, want ErrInvalid", key, err)
		}
	}
}
