package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// TestSimCommand: drover sim registers its nodes with a real server and
// prints counters until interrupted, then exits 0.
func TestSimCommand(t *testing.T) {
	addr := startAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "-servers", addr, "-nodes", "3", "-gpus", "dgxa100", "-datacenters", "dc1,dc2", "-report", "10ms"}, &out, &errb)
	}()
	c := api.NewClient(addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes, _, err := c.Nodes(ctx, nil)
		if err == nil && len(nodes) == 3 && strings.Contains(out.String(), "nodes=3 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 3 simulated nodes within 20s; nodes %d err %v; out %q err %q", len(nodes), err, out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("drover sim did not stop after its context ended")
	}
	resetFlags(rootCmd)
	if !strings.Contains(out.String(), "3 simulated nodes registered") {
		t.Errorf("output %q lacks the registration line", out.String())
	}
}
