package client

import (
	"testing"

	"github.com/drover/drover/drivers"
)

// The client's options block reaches every driver (exec reads
// user.denylist from it).
func TestDriversGetClientOptions(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Options = map[string]string{"user.denylist": ""}
	var got map[string]string
	cfg.Drivers = map[string]drivers.Factory{"fake": func(o drivers.Options) (drivers.Driver, error) {
		got = o.ClientOptions
		return fakeFactory(o)
	}}
	startClient(t, cfg)
	if v, ok := got["user.denylist"]; !ok || v != "" {
		t.Errorf("driver ClientOptions = %v, want user.denylist set to \"\"", got)
	}
}
