package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

const schedConfPath = "/v1/operator/scheduler/configuration"

func TestSchedulerConfigurationGetPut(t *testing.T) {
	a := newTestAPI(t)

	// Before any write: the defaults, Nomad-shaped.
	r := a.ok("GET", schedConfPath, nil, nil)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil || raw["SchedulerConfig"] == nil || raw["Index"] == nil {
		t.Fatalf("GET body %s: want SchedulerConfig and Index", r.body)
	}
	var got api.SchedulerConfigurationResponse
	a.ok("GET", schedConfPath, nil, &got)
	want := api.DefaultSchedulerConfiguration()
	if diff := cmp.Diff(want, got.SchedulerConfig); diff != "" || got.Index != 0 {
		t.Fatalf("default config at %d (-want +got):\n%s", got.Index, diff)
	}

	// A Nomad client's body (all fields, oversubscription off) is accepted.
	body := `{"SchedulerAlgorithm":"spread","MemoryOversubscriptionEnabled":false,"RejectJobRegistration":false,` +
		`"PauseEvalBroker":false,"PreemptionConfig":{"SystemSchedulerEnabled":true,"SysBatchSchedulerEnabled":false,` +
		`"BatchSchedulerEnabled":false,"ServiceSchedulerEnabled":true},"CreateIndex":0,"ModifyIndex":0}`
	var set api.SchedulerSetConfigurationResponse
	r = a.ok("PUT", schedConfPath, body, &set)
	if !set.Updated || set.Index == 0 || headerIndex(t, r) != set.Index {
		t.Fatalf("PUT: %+v header %s", set, r.header.Get(api.HeaderIndex))
	}
	a.ok("GET", schedConfPath, nil, &got)
	want = &api.SchedulerConfiguration{SchedulerAlgorithm: "spread",
		PreemptionConfig: api.PreemptionConfig{SystemSchedulerEnabled: true, ServiceSchedulerEnabled: true},
		CreateIndex:      set.Index, ModifyIndex: set.Index}
	if diff := cmp.Diff(want, got.SchedulerConfig); diff != "" || got.Index != set.Index {
		t.Fatalf("after PUT at %d (-want +got):\n%s", got.Index, diff)
	}

	// POST is the same write.
	a.ok("POST", schedConfPath, api.DefaultSchedulerConfiguration(), &set)
	if !set.Updated {
		t.Fatalf("POST: %+v", set)
	}
}

func TestSchedulerConfigurationCAS(t *testing.T) {
	a := newTestAPI(t)
	var set api.SchedulerSetConfigurationResponse
	spread := &api.SchedulerConfiguration{SchedulerAlgorithm: "spread"}
	a.ok("PUT", schedConfPath+"?cas=0", spread, &set)
	if !set.Updated {
		t.Fatalf("cas=0 on an unset config: %+v, want updated", set)
	}
	first := set.Index
	a.ok("PUT", schedConfPath+"?cas=0", api.DefaultSchedulerConfiguration(), &set)
	if set.Updated {
		t.Fatalf("cas=0 over a stored config: %+v, want not updated", set)
	}
	var got api.SchedulerConfigurationResponse
	a.ok("GET", schedConfPath, nil, &got)
	if got.SchedulerConfig.SchedulerAlgorithm != "spread" || got.SchedulerConfig.ModifyIndex != first {
		t.Fatalf("a failed CAS changed the config: %+v", got.SchedulerConfig)
	}
	a.ok("PUT", schedConfPath+"?cas="+itoa(first), api.DefaultSchedulerConfiguration(), &set)
	if !set.Updated || set.Index <= first {
		t.Fatalf("cas at the ModifyIndex: %+v, want updated", set)
	}
	a.ok("GET", schedConfPath, nil, &got)
	if got.SchedulerConfig.SchedulerAlgorithm != "binpack" || got.SchedulerConfig.CreateIndex != first {
		t.Fatalf("after CAS: %+v", got.SchedulerConfig)
	}
}

func TestSchedulerConfigurationErrors(t *testing.T) {
	a := newTestAPI(t, func(c *agenthttp.Config) { c.MaxBodyBytes = 1 << 10 })
	for _, tt := range []struct {
		name, path string
		body       any
		status     int
		code, msg  string
	}{
		{"unknown algorithm", schedConfPath, `{"SchedulerAlgorithm":"roundrobin"}`, 400, "bad_request", "roundrobin"},
		{"unsupported feature", schedConfPath, `{"MemoryOversubscriptionEnabled":true}`, 400, "bad_request", "MemoryOversubscriptionEnabled"},
		{"unknown field", schedConfPath, `{"Algorithm":"spread"}`, 400, "bad_request", "Algorithm"},
		{"malformed", schedConfPath, `{"SchedulerAlgorithm":`, 400, "bad_request", "JSON"},
		{"wrong type", schedConfPath, `{"PreemptionConfig":{"ServiceSchedulerEnabled":"yes"}}`, 400, "bad_request", "ServiceSchedulerEnabled"},
		{"empty body", schedConfPath, ``, 400, "bad_request", "body"},
		{"bad cas", schedConfPath + "?cas=abc", `{}`, 400, "bad_request", "cas"},
		{"too large", schedConfPath, `{"SchedulerAlgorithm":"` + strings.Repeat("x", 2<<10) + `"}`, 413, "body_too_large", "larger"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := a.fails("PUT", tt.path, tt.body, tt.status, tt.code)
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q does not mention %q", e.Message, tt.msg)
			}
		})
	}
	a.fails("DELETE", schedConfPath, nil, 405, "method_not_allowed")
	var got api.SchedulerConfigurationResponse
	a.ok("GET", schedConfPath, nil, &got)
	if diff := cmp.Diff(api.DefaultSchedulerConfiguration(), got.SchedulerConfig); diff != "" {
		t.Errorf("rejected writes changed the config (-want +got):\n%s", diff)
	}
}

// A blocking GET returns when the configuration changes.
func TestSchedulerConfigurationBlockingQuery(t *testing.T) {
	a := newTestAPI(t)
	var set api.SchedulerSetConfigurationResponse
	a.ok("PUT", schedConfPath, api.DefaultSchedulerConfiguration(), &set)
	done := make(chan api.SchedulerConfigurationResponse, 1)
	go func() {
		var got api.SchedulerConfigurationResponse
		r := a.do("GET", schedConfPath+"?wait=10s&index="+itoa(set.Index), nil)
		_ = json.Unmarshal(r.body, &got)
		done <- got
	}()
	var set2 api.SchedulerSetConfigurationResponse
	a.ok("PUT", schedConfPath, &api.SchedulerConfiguration{SchedulerAlgorithm: "spread"}, &set2)
	select {
	case got := <-done:
		if got.SchedulerConfig == nil || got.SchedulerConfig.SchedulerAlgorithm != "spread" || got.Index != set2.Index {
			t.Errorf("blocking GET answered %+v, want spread at %d", got.SchedulerConfig, set2.Index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking GET did not return after the write")
	}
}

// followerOf poses as a follower of the server behind leader: it says it
// does not lead and names leader's HTTP address.
type followerOf struct {
	agenthttp.Leadership
	leader string
}

func (f followerOf) IsLeader() bool                     { return false }
func (f followerOf) LeaderHTTPAddr() string             { return f.leader }
func (f followerOf) VerifyLeader(context.Context) error { return api.ErrNotLeader }

// A write on a follower is forwarded to the leader, like the other writes.
func TestSchedulerConfigurationWriteForwardedToLeader(t *testing.T) {
	leader := newTestAPI(t)
	follower := newTestAPI(t, func(c *agenthttp.Config) {
		c.Server.Leadership = followerOf{Leadership: c.Server.Leadership, leader: strings.TrimPrefix(leader.ts.URL, "http://")}
	})
	var set api.SchedulerSetConfigurationResponse
	follower.ok("PUT", schedConfPath, &api.SchedulerConfiguration{SchedulerAlgorithm: "spread"}, &set)
	if !set.Updated {
		t.Fatalf("PUT on the follower: %+v", set)
	}
	if c, _, _ := leader.srv.Operator().SchedulerConfig(); c.SchedulerAlgorithm != "spread" || c.ModifyIndex != set.Index {
		t.Errorf("leader's config %+v, want spread at %d", c, set.Index)
	}
	if c, _, _ := follower.srv.Operator().SchedulerConfig(); c.SchedulerAlgorithm != "binpack" {
		t.Errorf("the follower's own server was written: %+v", c)
	}
}
