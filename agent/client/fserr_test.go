package client

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// A path component over 255 bytes (NAME_MAX)
// is the caller's mistake: a 400 JSON error, not the 500 that the
// kernel's ENAMETOOLONG used to give on every fs route.
func TestFSLongPathIsBadRequest(t *testing.T) {
	_, a, base := httpClient(t)
	long := strings.Repeat("x", 300)
	for _, op := range []string{"cat", "ls", "stat"} {
		for _, p := range []string{long, "alloc/" + long, "alloc/data/" + long + "/f"} {
			st, body := get(t, base+"/v1/client/fs/"+op+"/"+a.ID+"?path="+url.QueryEscape(p))
			var eb api.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil {
				t.Errorf("%s %d-byte path: body %.200s, want a JSON error", op, len(p), body)
				continue
			}
			if st != 400 || eb.Error.Code != "bad_request" || !strings.Contains(eb.Error.Message, "255") {
				t.Errorf("%s %d-byte path: %d %+v, want 400 bad_request naming the length", op, len(p), st, eb.Error)
			}
		}
	}
	// A name of exactly 255 bytes is legal: not found, as any other. A
	// path over PATH_MAX (4096) can never be opened: a 400 too, not a 500.
	if st, _ := get(t, base+"/v1/client/fs/stat/"+a.ID+"?path="+strings.Repeat("y", 255)); st != 404 {
		t.Errorf("255-byte name: status %d, want 404", st)
	}
	deep := strings.Repeat("d/", 2100) + "f"
	if st, _ := get(t, base+"/v1/client/fs/stat/"+a.ID+"?path="+deep); st != 400 {
		t.Errorf("%d-byte path: status %d, want 400", len(deep), st)
	}
}
