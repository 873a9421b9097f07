package testproc

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runTB(f func(tb *fatalTB)) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

func TestEventually(t *testing.T) {
	var calls atomic.Int32
	msg := runTB(func(tb *fatalTB) {
		Eventually(tb, 10*time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	})
	if msg != "" || calls.Load() != 3 {
		t.Errorf("Eventually failed (%q) or called cond %d times, want 3", msg, calls.Load())
	}
	msg = runTB(func(tb *fatalTB) {
		Eventually(tb, 20*time.Millisecond, "never", func() bool { return false })
	})
	if !strings.Contains(msg, "waiting for never: timed out after 20ms") {
		t.Errorf("failure message %q", msg)
	}
}

func TestFreePortsDiffer(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p := FreePort(t)
		if seen[p] || p < freePortLow || p >= freePortHigh {
			t.Fatalf("port %d given twice or outside [%d, %d)", p, freePortLow, freePortHigh)
		}
		seen[p] = true
	}
}
