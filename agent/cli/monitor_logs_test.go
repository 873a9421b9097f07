package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `drover monitor -log-level debug` prints the agent's records as they
// happen (here the HTTP request log of a later request) and exits 0 when
// interrupted; a bad level or another agent's name is refused.
func TestCLIMonitorStreamsAgentLogs(t *testing.T) {
	addr := startAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"monitor", "-address", addr, "-log-level", "debug"}, &out, &errb) }()
	c := api.NewClient(addr)
	// Requests until one is in the monitor's output (another process's
	// stream: no signal).
	testproc.Eventually(t, 10*time.Second, "a request log in the monitor output", func() bool {
		if strings.Contains(out.String(), "path=/v1/jobs") {
			return true
		}
		if _, _, err := c.Jobs(ctx, nil); err != nil {
			t.Fatal(err)
		}
		return false
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("monitor exit %d, stderr %q", code, errb.String())
	}
	resetFlags(rootCmd)

	if code, _, stderr := runCLI(t, "monitor", "-address", addr, "-log-level", "loud"); code != 1 || !strings.Contains(stderr, "log_level") {
		t.Errorf("bad level: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "monitor", "-address", addr, "-node-id", "elsewhere"); code != 1 || !strings.Contains(stderr, "another agent") {
		t.Errorf("other node: exit %d stderr %q", code, stderr)
	}
}
