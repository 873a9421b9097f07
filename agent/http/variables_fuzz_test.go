package http

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// FuzzDecodeVariable: any variable body either decodes or fails with a
// 400/413 api error (never a panic); what decodes and passes the item
// checks is within the items limit.
func FuzzDecodeVariable(f *testing.F) {
	for _, s := range []string{`{"Items":{"k":"v"}}`, `{"Path":"a/b","Namespace":"default","Items":{"k":"v"},"Lock":{"TTL":"15s"}}`,
		`{"Items":{"":"v"}}`, `{"Items":{"k":1}}`, `{"Items":`, ``, `null`, `{} {}`, `[1]`, `{"Colour":1}`,
		`{"Lock":{"ID":"x","TTL":"-1s","LockDelay":"abc"}}`, `{"Items":{"k":"` + strings.Repeat("x", 2048) + `"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("PUT", "/v1/var/a", bytes.NewReader(body))
		v, err := decodeVariable(r, w)
		if err != nil {
			var e *api.Error
			if !errors.As(err, &e) || (e.Status != 400 && e.Status != 413) {
				t.Fatalf("decodeVariable(%q) = %v, want a 400/413 api error", body, err)
			}
			return
		}
		if api.ValidateVariableItems(v.Items) == nil {
			n := 0
			for k, val := range v.Items {
				n += len(k) + len(val)
			}
			if n > api.MaxVariableItemsBytes {
				t.Fatalf("items of %d bytes passed the check", n)
			}
		}
		if _, _, err := v.Lock.ParseLockDurations(); err != nil && !errors.Is(err, api.ErrBadRequest) {
			t.Fatalf("lock durations of %q: %v, want a 400", body, err)
		}
	})
}

// FuzzVariablePath: a path that passes the check is one Nomad allows
// (no empty, "." or ".." segment, only [A-Za-z0-9_.~/-], at most 128).
func FuzzVariablePath(f *testing.F) {
	for _, s := range []string{"a/b", "a/../b", "./a", "a//b", "nomad/jobs/x", "nomad/x", "é", "a b", strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if api.ValidateVariablePath(p) != nil {
			return
		}
		if len(p) > api.MaxVariablePathLen || strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~/-") != "" {
			t.Fatalf("path %q passed", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("path %q with segment %q passed", p, seg)
			}
		}
	})
}
