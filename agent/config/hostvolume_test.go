package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// host_volume blocks and -host-volume flags become the client's host
// volumes; a missing path or a relative one is refused by Validate.
func TestHostVolumes(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse([]byte(`client {
  enabled = true
  host_volume "models" {
    path      = "`+dir+`"
    read_only = true
  }
  host_volume "scratch" {
    path = "`+dir+`"
  }
}`), "a.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*api.ClientHostVolumeConfig{"models": {Name: "models", Path: dir, ReadOnly: true}, "scratch": {Name: "scratch", Path: dir}}
	if diff := cmp.Diff(want, c.Client.HostVolumes); diff != "" {
		t.Errorf("host volumes (-want +got):\n%s", diff)
	}
	c.Server.Enabled, c.DataDir, c.Server.Encrypt = true, dir, testKey
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, bad := range []struct{ path, want string }{{"rel/dir", "must be absolute"}, {dir + "/missing", "is not a directory"}} {
		c.Client.AddHostVolume("x", bad.path, false)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("path %q: %v, want %q", bad.path, err, bad.want)
		}
	}
	if _, err := Parse([]byte("client {\n  host_volume \"m\" {\n  }\n}\n"), "b.hcl", nil); err == nil || !strings.Contains(err.Error(), "b.hcl:2,") {
		t.Errorf("host_volume without path: %v, want an error at b.hcl:2", err)
	}
	for in, want := range map[string][3]any{"m=/srv/m": {"m", "/srv/m", false}, "m=/srv/m:ro": {"m", "/srv/m", true}} {
		n, p, ro, err := ParseHostVolumeFlag(in)
		if err != nil || n != want[0] || p != want[1] || ro != want[2] {
			t.Errorf("ParseHostVolumeFlag(%q) = %q %q %v %v", in, n, p, ro, err)
		}
	}
	if _, _, _, err := ParseHostVolumeFlag("nopath"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseHostVolumeFlag(nopath) = %v", err)
	}
}
