package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// countingCodec is encoding/json, counting its calls.
type countingCodec struct{ marshals, unmarshals int }

func (c *countingCodec) Marshal(v any) ([]byte, error) { c.marshals++; return json.Marshal(v) }
func (c *countingCodec) Unmarshal(data []byte, v any) error {
	c.unmarshals++
	return json.Unmarshal(data, v)
}

// A Client's JSON codec encodes its request bodies and decodes its
// answers; without one, encoding/json does.
func TestClientJSONCodec(t *testing.T) {
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set(HeaderIndex, "7")
		_, _ = io.WriteString(w, `{"Index":7,"Allocs":{"a":3}}`+"\n")
	}))
	defer srv.Close()
	for _, withCodec := range []bool{false, true} {
		c := NewClient(srv.URL)
		cc := &countingCodec{}
		if withCodec {
			c.JSON = cc
		}
		var out NodeClientAllocsResponse
		m, err := c.Query(context.Background(), "/v1/node/n/allocations", &out, nil)
		if err != nil || m.LastIndex != 7 || out.Allocs["a"] != 3 {
			t.Fatalf("codec %v: Query = %+v, %+v, %v", withCodec, out, m, err)
		}
		out = NodeClientAllocsResponse{}
		if err := c.Write(context.Background(), http.MethodPost, "/v1/x", &NodeAllocUpdateRequest{Allocs: []*Allocation{{ID: "a"}}}, &out, nil); err != nil || out.Index != 7 {
			t.Fatalf("codec %v: Write = %+v, %v", withCodec, out, err)
		}
		var sent NodeAllocUpdateRequest
		if err := json.Unmarshal([]byte(gotBody), &sent); err != nil || len(sent.Allocs) != 1 || sent.Allocs[0].ID != "a" {
			t.Fatalf("codec %v: server got %q (%v)", withCodec, gotBody, err)
		}
		want := 0
		if withCodec {
			want = 1
		}
		if cc.marshals != want || cc.unmarshals != 2*want {
			t.Errorf("codec %v: %d marshals, %d unmarshals; want %d, %d", withCodec, cc.marshals, cc.unmarshals, want, 2*want)
		}
	}
}
