package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

func strp(s string) *string { return &s }

// Dynamic node metadata reaches the servers (re-registration), hides a
// static key it unsets, survives a restart, and bad changes change
// nothing.
func TestNodeMetaApplyReregistersAndPersists(t *testing.T) {
	srv := newFakeServer(t)
	dir := t.TempDir()
	c1, err := New(testConfig(dir, srv.addr()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	serverMeta := func() map[string]string {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.node == nil {
			return nil
		}
		return srv.node.Meta
	}
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { return serverMeta()["rack"] == "r1" })

	body, _ := json.Marshal(api.NodeMetaApplyRequest{Meta: map[string]*string{"gpu.pool": strp("train"), "rack": nil}})
	rec := httptest.NewRecorder()
	c1.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/client/metadata", bytes.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("apply: %d %s", rec.Code, rec.Body)
	}
	var resp api.NodeMetaResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Meta["gpu.pool"] != "train" || resp.Meta["rack"] != "" || resp.Static["rack"] != "r1" || resp.Dynamic["rack"] != nil {
		t.Fatalf("apply response %+v", resp)
	}
	testproc.Eventually(t, 15*time.Second, "server sees the new meta", func() bool {
		m := serverMeta()
		_, hasRack := m["rack"]
		return m["gpu.pool"] == "train" && !hasRack
	})

	for name, change := range map[string]map[string]*string{
		"empty key": {"": strp("x")},
		"long key":  {strings.Repeat("k", maxMetaKeyLen+1): strp("x")},
		"long val":  {"ok": strp(strings.Repeat("v", maxMetaValueLen+1))},
	} {
		if _, err := c1.ApplyNodeMeta(change); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%s: err %v, want bad request", name, err)
		}
	}
	if m := c1.Node().Meta; len(m) != 1 || m["gpu.pool"] != "train" {
		t.Errorf("a refused change altered the meta: %v", m)
	}
	rec = httptest.NewRecorder()
	other, _ := json.Marshal(api.NodeMetaApplyRequest{NodeID: "another", Meta: map[string]*string{"a": strp("b")}})
	c1.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/client/metadata", bytes.NewReader(other)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("apply for another node: %d, want 400", rec.Code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := startClient(t, testConfig(dir, srv.addr()))
	if m := c2.Node().Meta; m["gpu.pool"] != "train" || m["rack"] != "" {
		t.Fatalf("meta after restart %v", m)
	}
	// Setting the hidden static key shows it again; unsetting a dynamic-only
	// key removes it.
	if _, err := c2.ApplyNodeMeta(map[string]*string{"rack": strp("r9"), "gpu.pool": nil}); err != nil {
		t.Fatal(err)
	}
	if m := c2.Node().Meta; m["rack"] != "r9" || len(m) != 1 {
		t.Fatalf("meta %v", m)
	}
}
