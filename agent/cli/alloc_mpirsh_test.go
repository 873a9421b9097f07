package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// gangMemberOn maps the host mpirun names (an address from the gang
// hostfile, a host name from the gang hosts file, or an alloc name) to the
// member to exec into: on a host with several members the lowest rank.
func TestMPIRshGangMemberOn(t *testing.T) {
	gang := &api.AllocGang{ID: "ranks", Size: 3, Rank: 0, Members: []api.GangMember{
		{Rank: 0, AllocID: "a0", Name: "mpi.ranks[0]", Address: "10.0.0.1"},
		{Rank: 1, AllocID: "a1", Name: "mpi.ranks[1]", Address: "10.0.0.2"},
		{Rank: 2, AllocID: "a2", Name: "mpi.ranks[2]", Address: "10.0.0.2"},
	}}
	allocs := map[string]*api.Allocation{
		"a0":    {ID: "a0", JobID: "mpi", Gang: gang},
		"plain": {ID: "plain", JobID: "web"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := allocs[strings.TrimPrefix(r.URL.Path, "/v1/allocation/")]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL)
	for _, tc := range []struct {
		self, host, want, err string
	}{
		{"a0", "10.0.0.2", "a1", ""}, // two members there: rank 1
		{"a0", "10.0.0.1", "a0", ""}, // its own host (mpirun may not know it as local)
		{"a0", "mpi-ranks-2", "a2", ""},
		{"a0", "mpi.ranks[1]", "a1", ""},
		{"a0", "10.0.0.9", "", "no member of gang ranks on it (members' addresses: 10.0.0.1, 10.0.0.2, 10.0.0.2)"},
		{"plain", "10.0.0.1", "", "allocation plain is not a gang member"},
	} {
		got, err := gangMemberOn(context.Background(), c, tc.self, tc.host)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("gangMemberOn(%s, %s) = %q, %v; want %q, %q", tc.self, tc.host, got, err, tc.want, tc.err)
		}
	}
}
