package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/drover/drover/api"
)

// FuzzDecodeBody: any body either decodes or fails with a 400/413 api
// error; never a panic, never an internal error.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"Job":{"ID":"a"}}`, `{"Job":`, ``, `null`, `{"Job":{"TaskGroups":[{"Count":"x"}]}}`, `{} {}`, `[1,2]`, `{"Job":{"Bogus":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("PUT", "/v1/jobs", bytes.NewReader(body))
		r.Body = nethttp.MaxBytesReader(w, io.NopCloser(bytes.NewReader(body)), 1<<10)
		var req api.JobRegisterRequest
		err := decodeBody(r, &req)
		if err == nil {
			return
		}
		var e *api.Error
		if !errors.As(err, &e) {
			t.Fatalf("decodeBody(%q) = %v, not an *api.Error", body, err)
		}
		if e.Status != 400 && e.Status != 413 {
			t.Fatalf("decodeBody(%q) status %d (%s), want 400 or 413", body, e.Status, e.Message)
		}
	})
}

// FuzzDecodeSchedulerConfig: any body either decodes into a valid
// configuration or fails with a 400/413 api error; never a panic.
func FuzzDecodeSchedulerConfig(f *testing.F) {
	for _, s := range []string{`{"SchedulerAlgorithm":"spread"}`, `{"SchedulerAlgorithm":"x"}`, ``, `null`,
		`{"PreemptionConfig":{"ServiceSchedulerEnabled":1}}`, `{"PauseEvalBroker":true}`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("PUT", "/v1/operator/scheduler/configuration", bytes.NewReader(body))
		r.Body = nethttp.MaxBytesReader(w, io.NopCloser(bytes.NewReader(body)), 1<<10)
		c, err := decodeSchedulerConfig(r)
		if err == nil {
			if c.Validate() != nil {
				t.Fatalf("decodeSchedulerConfig(%q) accepted an invalid config %+v", body, c)
			}
			return
		}
		var e *api.Error
		if !errors.As(err, &e) || (e.Status != 400 && e.Status != 413) {
			t.Fatalf("decodeSchedulerConfig(%q) = %v, want a 400/413 api error", body, err)
		}
	})
}

// FuzzDecodeClientBody: the client protocol's decoder accepts what
// encoding/json accepts (unknown fields included) with the same result,
// and fails with a 400/413 api error otherwise.
func FuzzDecodeClientBody(f *testing.F) {
	for _, s := range []string{`{"Allocs":[{"ID":"a","ClientStatus":"running","TaskStates":{"t":{"State":"running"}}}]}`,
		`{"Allocs":[{"ID":"a","Bogus":1}]}`, `{"Allocs":`, ``, `null`, `{"Allocs":[{"ID":1}]}`, `{} {}`, `[1,2]`,
		`{"Allocs":[{"ID":"\u00e9\ud800"}]}`, `{"allocs":[{"id":"a"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/node/n1/allocations", nil)
		r.Body = nethttp.MaxBytesReader(w, io.NopCloser(bytes.NewReader(body)), 1<<10)
		var got api.NodeAllocUpdateRequest
		err := decodeClientBody(r, &got)
		var want api.NodeAllocUpdateRequest
		wantErr := decodeOne(json.NewDecoder(bytes.NewReader(body)), &want)
		if len(body) > 1<<10 {
			wantErr = errors.New("too large")
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeClientBody(%q) = %v, encoding/json: %v", body, err, wantErr)
		}
		if err == nil {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeClientBody(%q) = %+v, encoding/json %+v", body, got, want)
			}
			return
		}
		var e *api.Error
		if !errors.As(err, &e) || (e.Status != 400 && e.Status != 413) {
			t.Fatalf("decodeClientBody(%q) = %v, want a 400/413 api error", body, err)
		}
	})
}
