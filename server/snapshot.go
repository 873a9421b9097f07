package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// snapshotMagic starts every `operator snapshot save` file; the first
// line is a JSON header, the FSM snapshot follows.
const snapshotMagic = "drover-snapshot"

// MaxSnapshotBytes bounds a snapshot accepted by RestoreSnapshot.
const MaxSnapshotBytes = 4 << 30

// SnapshotHeader is the first line of a snapshot file.
type SnapshotHeader struct {
	Format  string `json:"Format"`
	Version int    `json:"Version"`
	Index   uint64 `json:"Index"`
	Size    int64  `json:"Size"`
	SHA256  string `json:"SHA256"`
	Created string `json:"Created"`
}

// ErrBadSnapshotFile wraps every problem with a snapshot file (it is also
// an api.ErrBadRequest for the HTTP layer).
var ErrBadSnapshotFile = api.Errorf(api.ErrBadRequest, "bad snapshot file")

// bufSink collects an FSM snapshot in memory.
type bufSink struct{ bytes.Buffer }

func (b *bufSink) ID() string    { return "operator" }
func (b *bufSink) Cancel() error { return nil }
func (b *bufSink) Close() error  { return nil }

// writeSnapshot writes a snapshot file of f's state to w (header line,
// then the FSM snapshot) and returns its index.
func writeSnapshot(ctx context.Context, w io.Writer, f *fsm.FSM) (uint64, error) {
	index := f.State().LatestIndex()
	snap, err := f.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	var sink bufSink
	if err := snap.Persist(&sink); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	sum := sha256.Sum256(sink.Bytes())
	hdr, _ := json.Marshal(SnapshotHeader{
		Format: snapshotMagic, Version: 1, Index: index, Size: int64(sink.Len()),
		SHA256: hex.EncodeToString(sum[:]), Created: time.Now().UTC().Format(time.RFC3339),
	})
	if _, err := w.Write(append(hdr, '\n')); err != nil {
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	if _, err := w.Write(sink.Bytes()); err != nil {
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	return index, nil
}

// ReadSnapshot parses and fully verifies a snapshot file: header,
// size, checksum and every record (decoded into a scratch state store),
// so a bad file is refused before anything is touched.
func ReadSnapshot(r io.Reader) (*SnapshotHeader, []byte, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxSnapshotBytes+4096))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return nil, nil, fmt.Errorf("header: %v: %w", err, ErrBadSnapshotFile)
	}
	var h SnapshotHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Format != snapshotMagic {
		return nil, nil, fmt.Errorf("not a drover snapshot (header %.40q): %w", line, ErrBadSnapshotFile)
	}
	if h.Version != 1 {
		return nil, nil, fmt.Errorf("snapshot version %d not supported: %w", h.Version, ErrBadSnapshotFile)
	}
	if h.Size < 0 || h.Size > MaxSnapshotBytes {
		return nil, nil, fmt.Errorf("snapshot size %d: %w", h.Size, ErrBadSnapshotFile)
	}
	body := make([]byte, h.Size)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, nil, fmt.Errorf("snapshot body (%d bytes expected): %v: %w", h.Size, err, ErrBadSnapshotFile)
	}
	if n, _ := br.Read(make([]byte, 1)); n > 0 {
		return nil, nil, fmt.Errorf("data after the snapshot body: %w", ErrBadSnapshotFile)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, nil, fmt.Errorf("checksum mismatch: %w", ErrBadSnapshotFile)
	}
	scratch := fsm.New(fsm.Config{})
	if err := scratch.Restore(io.NopCloser(bytes.NewReader(body))); err != nil {
		return nil, nil, fmt.Errorf("%v: %w", err, ErrBadSnapshotFile)
	}
	return &h, body, nil
}
