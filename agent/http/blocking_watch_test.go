package http

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// watch returns once any watched channel closes, and with the context's
// error once it ends first, for sets of every size.
func TestWatch(t *testing.T) {
	for n := 0; n <= 5; n++ {
		chs := make([]chan struct{}, n)
		ws := memdb.NewWatchSet()
		for i := range chs {
			chs[i] = make(chan struct{})
			ws.Add(chs[i])
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		if err := watch(ctx, ws); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d channels, none fired: %v, want the deadline", n, err)
		}
		cancel()
		for i := range chs {
			close(chs[i])
			if err := watch(context.Background(), ws); err != nil {
				t.Errorf("%d channels, #%d fired: %v", n, i, err)
			}
			chs[i] = make(chan struct{})
			ws = memdb.NewWatchSet()
			for _, c := range chs {
				ws.Add(c)
			}
		}
	}
	if err := watch(context.Background(), nil); err != nil {
		t.Errorf("nil set: %v", err)
	}
}
