package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
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
	defer func() {
		if t.Failed() {
			t.Logf("sim output %q, stderr %q", out.String(), errb.String())
		}
	}()
	// The report line is the sim's output, not the server's state: poll.
	testproc.Eventually(t, 20*time.Second, "3 simulated nodes registered and reported", func() bool {
		nodes, _, err := c.Nodes(ctx, nil)
		return err == nil && len(nodes) == 3 && strings.Contains(out.String(), "nodes=3 ")
	})
	stopSim(t, cancel, done, &errb)
	if !strings.Contains(out.String(), "3 simulated nodes registered") {
		t.Errorf("output %q lacks the registration line", out.String())
	}
}

// TestSimAddress: without -servers drover sim uses the CLI's address
// (here $DROVER_ADDR), and fails at once, naming the address, when no
// server answers there.
func TestSimAddress(t *testing.T) {
	t.Setenv("DROVER_ADDR", "http://127.0.0.1:1")
	code, _, stderr := runCLI(t, "sim", "-nodes", "1")
	if code != ExitError || !strings.Contains(stderr, "no drover server answers at http://127.0.0.1:1") {
		t.Errorf("sim against nothing: exit %d, stderr %q; want 1 naming the address", code, stderr)
	}

	addr := startAPI(t)
	t.Setenv("DROVER_ADDR", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "-nodes", "2", "-report", "10ms"}, &out, &errb)
	}()
	testproc.Eventually(t, 20*time.Second, "2 simulated nodes registered at $DROVER_ADDR", func() bool {
		return strings.Contains(out.String(), "2 simulated nodes registered")
	})
	stopSim(t, cancel, done, &errb)
}

// stopSim ends a drover sim run in the background (its context) and
// checks that it exits, and with ExitOK.
func stopSim(t *testing.T, cancel context.CancelFunc, done <-chan int, errb *syncBuffer) {
	t.Helper()
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
}
