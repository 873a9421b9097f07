package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
)

// TestMockDriverLogsFollow runs a drivers/mock task writing real rotated
// log files and follows its stdout until the task ends.
func TestMockDriverLogsFollow(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Drivers = map[string]drivers.Factory{mock.Name: mock.New}
	c := startClient(t, cfg)
	if _, ok := c.Node().Drivers[mock.Name]; !ok {
		t.Fatalf("mock driver not fingerprinted: %v", c.Node().Drivers)
	}
	a := testAlloc(c.NodeID(), "eeeeeeee-0000-4000-8000-000000000001", map[string]any{
		"stdout_string": "tick\n", "stdout_repeat": 4, "stdout_repeat_duration": "20ms", "run_for": "150ms"})
	a.Job.Type = api.JobTypeBatch
	a.Job.TaskGroups[0].Tasks[0].Driver = mock.Name
	if err := c.startRunner(a, false); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	req, _ := http.NewRequestWithContext(context.Background(), "GET",
		srv.URL+"/v1/client/fs/logs/"+a.ID+"?task=web&type=stdout&plain=true&follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body) // ends when the alloc completes
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), strings.Repeat("tick\n", 5); got != want {
		t.Errorf("followed log = %q, want %q", got, want)
	}
	ar, _ := c.runner(a.ID)
	if got := ar.Alloc().ClientStatus; got != api.AllocClientStatusComplete {
		t.Errorf("client status %s, want complete", got)
	}
}
