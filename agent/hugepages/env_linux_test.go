package hugepages

import (
	"io"
	"log/slog"
	"testing"
)

// TestStartFromEnvIsOptIn: without DROVER_HEAP_HUGEPAGES=1 no Advisor
// starts, even where one could; with it, StartFromEnv is Start.
func TestStartFromEnvIsOptIn(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, v := range []string{"", "0", "true"} {
		t.Setenv(EnvVar, v)
		if a := StartFromEnv(l); a != nil {
			a.Stop()
			t.Errorf("StartFromEnv with %s=%q = an Advisor, want none", EnvVar, v)
		}
	}
	t.Setenv(EnvVar, "1")
	a := StartFromEnv(l)
	defer a.Stop()
	if why := systemOffReason(); (a != nil) != (why == "") {
		t.Errorf("StartFromEnv with %s=1 = %v, want an Advisor exactly where the system allows one (off reason %q)", EnvVar, a, why)
	}
}
