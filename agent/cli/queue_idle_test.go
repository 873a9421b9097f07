package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestQueueFileIdleSettings(t *testing.T) {
	qs, err := parseQueues("q.hcl", []byte(`queue "nb" {
  idle_timeout = "2h"
  idle_action  = "preempt"
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if q := qs[0]; q.IdleTimeout != 2*time.Hour || q.IdleAction != api.IdleActionPreempt {
		t.Errorf("queue = timeout %v action %q, want 2h preempt", q.IdleTimeout, q.IdleAction)
	}
	for src, want := range map[string]string{
		`queue "nb" { idle_action = "kill" }`:  "idle_action",
		`queue "nb" { idle_timeout = "soon" }`: "idle_timeout",
		`queue "nb" { idle_timeout = "-1h" }`:  "idle_timeout",
	} {
		if _, err := parseQueues("q.hcl", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one naming %s", src, err, want)
		}
	}
}
