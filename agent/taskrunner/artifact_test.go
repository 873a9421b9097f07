package taskrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestFetchArtifacts(t *testing.T) {
	body := "#!/bin/sh\necho hi\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/private" && r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	sum := sha256.Sum256([]byte(body))
	good := "sha256:" + hex.EncodeToString(sum[:])
	env := map[string]string{"TOKEN": "tok"}
	dir := t.TempDir()
	err := FetchArtifacts(context.Background(), []*api.TaskArtifact{
		{GetterSource: srv.URL + "/bin/app.sh", GetterOptions: map[string]string{"checksum": good}},
		{GetterSource: srv.URL + "/private", RelativeDest: "local/conf/p.txt", GetterHeaders: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
	}, dir, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"local/app.sh", "local/conf/p.txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != body {
			t.Errorf("%s = %q, %v", p, b, err)
		}
	}
	for _, tc := range []struct {
		art  *api.TaskArtifact
		want string
	}{
		{&api.TaskArtifact{GetterSource: srv.URL + "/x", GetterOptions: map[string]string{"checksum": "sha256:00"}}, "checksum mismatch"},
		{&api.TaskArtifact{GetterSource: "git::https://example.com/repo"}, "unsupported source scheme"},
		{&api.TaskArtifact{GetterSource: srv.URL + "/x", RelativeDest: "../../etc/x"}, "escapes"},
		{&api.TaskArtifact{GetterSource: srv.URL + "/private"}, "status 403"},
	} {
		err := FetchArtifacts(context.Background(), []*api.TaskArtifact{tc.art}, dir, env, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.art, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "local", "x")); !os.IsNotExist(err) {
		t.Errorf("a failed download left a file: %v", err)
	}
}

func TestWritePayload(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WritePayload(dir, &api.DispatchPayloadConfig{File: "in/data.json"}, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "local", "in", "data.json")); string(b) != `{"a":1}` {
		t.Errorf("payload = %q", b)
	}
	if err := WritePayload(dir, &api.DispatchPayloadConfig{File: "../../x"}, []byte("x")); err == nil {
		t.Error("escaping payload file: want an error")
	}
}
