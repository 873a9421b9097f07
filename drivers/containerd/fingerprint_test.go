package containerd

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/containerd/ctrtest"
)

func TestFingerprintHealthy(t *testing.T) {
	d := newDriver(t, nil)
	fp := d.Fingerprint(context.Background())
	if fp.Health != drivers.HealthHealthy {
		t.Fatalf("health %q (%s), want healthy", fp.Health, fp.HealthDescription)
	}
	v := fp.Attributes["driver.containerd.version"]
	if fp.Attributes["driver.containerd"] != "1" || fp.Attributes["driver.containerd.runtime"] != DefaultRuntime ||
		!strings.ContainsAny(v, "0123456789") {
		t.Fatalf("attributes %v", fp.Attributes)
	}
}

func TestFingerprintSocketAbsent(t *testing.T) {
	d, err := New(drivers.Options{Config: map[string]any{"address": filepath.Join(t.TempDir(), "nope.sock")}})
	if err != nil {
		t.Fatal(err)
	}
	fp := d.Fingerprint(context.Background())
	if fp.Health != drivers.HealthUnhealthy || fp.Attributes["driver.containerd"] != "" {
		t.Fatalf("fingerprint %+v, want unhealthy without attributes", fp)
	}
	cfg := shTask(t, "true")
	if _, err := d.StartTask(context.Background(), cfg); err == nil {
		t.Fatal("StartTask without a daemon succeeded")
	}
}

// A daemon that goes away turns the driver unhealthy; one that comes back
// makes it healthy again (the connection is redialled).
func TestFingerprintDaemonGoneAndBack(t *testing.T) {
	needDaemon(t)
	dir, err := filepathShortTemp(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dm, err := ctrtest.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(drivers.Options{Config: map[string]any{"address": dm.Address}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fp := d.Fingerprint(ctx); fp.Health != drivers.HealthHealthy {
		t.Fatalf("health %q (%s)", fp.Health, fp.HealthDescription)
	}
	dm.Stop(ctx)
	if fp := d.Fingerprint(ctx); fp.Health != drivers.HealthUnhealthy || fp.Attributes["driver.containerd"] != "" {
		t.Fatalf("after stop: %+v, want unhealthy", fp)
	}
	dm2, err := ctrtest.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dm2.Stop(context.Background())
	if fp := d.Fingerprint(ctx); fp.Health != drivers.HealthHealthy {
		t.Fatalf("after restart: %q (%s), want healthy", fp.Health, fp.HealthDescription)
	}
}

func TestAddressFromEnvironment(t *testing.T) {
	t.Setenv("CONTAINERD_ADDRESS", "/run/other.sock")
	c, err := ParseClientConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Address != "/run/other.sock" {
		t.Errorf("address %q, want the env's", c.Address)
	}
	c, err = ParseClientConfig(map[string]any{"address": "/x.sock"})
	if err != nil || c.Address != "/x.sock" {
		t.Errorf("explicit address: %q, %v", c.Address, err)
	}
}

// A socket file nobody listens on (a daemon killed with SIGKILL leaves
// one) is unhealthy at once, not after a dial timeout.
func TestFingerprintStaleSocket(t *testing.T) {
	dir, err := filepathShortTemp(t)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	d, err := New(drivers.Options{Config: map[string]any{"address": sock}})
	if err != nil {
		t.Fatal(err)
	}
	if fp := d.Fingerprint(context.Background()); fp.Health != drivers.HealthUnhealthy {
		t.Fatalf("fingerprint %+v, want unhealthy", fp)
	}
}
