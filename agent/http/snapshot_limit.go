package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"time"

	"github.com/drover/drover/api"
)

// DefaultSnapshotRestoreMaxBytes bounds the snapshot file of
// PUT /v1/operator/snapshot (agent config
// limits.snapshot_restore_max_bytes): the whole state is held in memory
// while it is verified and restored, so a larger file is refused.
const DefaultSnapshotRestoreMaxBytes = 1 << 30

// snapshotProgress is how much of a restore body must arrive within one
// read timeout: a large snapshot may take longer than the timeout as a
// whole, but not dawdle.
const snapshotProgress = 1 << 20

// progressBody pushes the connection's read deadline forward by the read
// timeout each snapshotProgress bytes (the middleware wraps a restore's
// body with it, so a follower forwarding one to the leader reads at the
// same pace).
type progressBody struct {
	io.ReadCloser
	rc      *nethttp.ResponseController
	timeout time.Duration
	since   int
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.since += n; b.since >= snapshotProgress {
		b.since = 0
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
	return n, err
}

// snapshotBody is the restore request body, read through
// http.MaxBytesReader; it remembers whether the limit or the read
// deadline was hit, since the snapshot reader reports a short read as a
// bad file.
type snapshotBody struct {
	r        io.Reader
	tooLarge bool
	timedOut bool
}

func (b *snapshotBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *nethttp.MaxBytesError
	if errors.As(err, &mbe) {
		b.tooLarge = true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut = true
	}
	return n, err
}

// limitedSnapshot wraps the restore body with the configured limit. A
// file whose header already declares a larger size is refused before
// anything more is read (the reader would allocate the declared size).
func (h *operatorHandlers) limitedSnapshot(w nethttp.ResponseWriter, r *nethttp.Request) (io.Reader, func(error) error, error) {
	limit := h.s.cfg.SnapshotRestoreMaxBytes
	tooLarge := func() error {
		return api.Errorf(api.ErrBodyTooLarge, fmt.Sprintf("snapshot larger than %d bytes (agent limits.snapshot_restore_max_bytes)", limit))
	}
	body := &snapshotBody{r: nethttp.MaxBytesReader(w, r.Body, limit)}
	br := bufio.NewReaderSize(body, 64<<10)
	line, _ := br.ReadSlice('\n')
	if body.tooLarge {
		return nil, nil, tooLarge()
	}
	var head struct{ Size int64 }
	if json.Unmarshal(line, &head) == nil && head.Size > limit {
		return nil, nil, tooLarge()
	}
	rd := io.MultiReader(bytes.NewReader(bytes.Clone(line)), br)
	classify := func(err error) error {
		switch {
		case err != nil && body.tooLarge:
			return tooLarge()
		case err != nil && body.timedOut:
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("snapshot arriving slower than %d bytes per %v (agent limits.http_read_timeout)", snapshotProgress, h.s.cfg.ReadTimeout))
		}
		return err
	}
	return rd, classify, nil
}
