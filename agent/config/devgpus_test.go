package config

import (
	"errors"
	"testing"
)

func TestDevGPUs(t *testing.T) {
	c, err := Parse([]byte("client {\n  enabled  = true\n  dev_gpus = \"dgxh100\"\n}\nserver {\n  enabled = true\n}\n"), "a.hcl", Dev())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Client.DevGPUs != "dgxh100" {
		t.Errorf("DevGPUs = %q, want dgxh100", c.Client.DevGPUs)
	}
	s := Default()
	s.Server.Enabled, s.DataDir, s.Client.DevGPUs, s.Server.Encrypt = true, "/d", "dgxh100", testKey
	if err := s.Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("dev_gpus without the client role: %v, want ErrInvalid", err)
	}
}
