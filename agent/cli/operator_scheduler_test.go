package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestCLIOperatorScheduler(t *testing.T) {
	addr := startAPI(t)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	getJSON := func() *api.SchedulerConfiguration {
		t.Helper()
		code, out, stderr := cli("operator", "scheduler", "get-config", "-json")
		var resp api.SchedulerConfigurationResponse
		if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || resp.SchedulerConfig == nil {
			t.Fatalf("get-config -json: exit %d %q %q", code, out, stderr)
		}
		return resp.SchedulerConfig
	}

	if c := getJSON(); c.Algorithm() != "binpack" || c.PreemptionConfig != api.DefaultPreemptionConfig() || !c.PreemptionConfig.ServiceSchedulerEnabled {
		t.Fatalf("default config: %+v", c)
	}
	code, out, _ := cli("operator", "scheduler", "get-config")
	for _, want := range []string{"Scheduler Algorithm", "= binpack", "Preemption Config", "Service Scheduler Enabled", "= true"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("get-config: exit %d, output %q lacks %q", code, out, want)
		}
	}

	if code, out, stderr := cli("operator", "scheduler", "set-config", "-scheduler-algorithm=spread", "-preempt-batch-scheduler=false", "-usage-retention-hours", "48"); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("set-config: exit %d %q %q", code, out, stderr)
	}
	c := getJSON()
	want := api.PreemptionConfig{SystemSchedulerEnabled: true, SysBatchSchedulerEnabled: true, ServiceSchedulerEnabled: true}
	// (batch preemption, on by default, is now off)
	if c.SchedulerAlgorithm != "spread" || c.PreemptionConfig != want || c.UsageRetentionHours != 48 {
		t.Fatalf("after set-config: %+v, want spread and %+v (flags not given are kept)", c, want)
	}

	// -check-index: a stale index is refused (exit 1), the current one writes.
	stale := strconv.FormatUint(c.ModifyIndex-1, 10)
	if code, _, stderr := cli("operator", "scheduler", "set-config", "-preempt-batch-scheduler=true", "-check-index", stale); code != ExitError || !strings.Contains(stderr, "not updated") {
		t.Errorf("set-config with a stale -check-index: exit %d %q, want 1", code, stderr)
	}
	if getJSON().PreemptionConfig.BatchSchedulerEnabled {
		t.Error("a refused check-and-set changed the config")
	}
	cur := strconv.FormatUint(c.ModifyIndex, 10)
	if code, _, stderr := cli("operator", "scheduler", "set-config", "-preempt-system-scheduler=false", "-check-index", cur); code != 0 {
		t.Fatalf("set-config with the current -check-index: exit %d %q", code, stderr)
	}
	if c := getJSON(); c.PreemptionConfig.SystemSchedulerEnabled || !c.PreemptionConfig.ServiceSchedulerEnabled || c.SchedulerAlgorithm != "spread" {
		t.Errorf("after check-and-set: %+v", c)
	}

	if code, _, stderr := cli("operator", "scheduler", "set-config", "-scheduler-algorithm=fifo"); code != ExitUsage || !strings.Contains(stderr, "binpack") {
		t.Errorf("unknown algorithm: exit %d %q, want 2", code, stderr)
	}
}
