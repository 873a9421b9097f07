package config

import (
	"errors"
	"testing"
)

// TestJobMaxGroupCount: server job_max_group_count reaches the config;
// unset it stays 0 (the server's default); zero or less is rejected.
func TestJobMaxGroupCount(t *testing.T) {
	c, err := Parse([]byte("server {\n  job_max_group_count = 20000\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.JobMaxGroupCount != 20000 {
		t.Errorf("job_max_group_count = %d, want 20000", c.Server.JobMaxGroupCount)
	}
	if c, err := Parse([]byte("server {\n  enabled = true\n}\n"), "agent.hcl", nil); err != nil {
		t.Fatal(err)
	} else if c.Server.JobMaxGroupCount != 0 {
		t.Errorf("unset: %d, want 0 (the server's default)", c.Server.JobMaxGroupCount)
	}
	for _, v := range []string{"0", "-1"} {
		if _, err := Parse([]byte("server {\n  job_max_group_count = "+v+"\n}\n"), "agent.hcl", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("job_max_group_count = %s: %v, want ErrInvalid", v, err)
		}
	}
}
