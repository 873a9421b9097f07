package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/network"
	"github.com/drover/drover/api"
	ctrdriver "github.com/drover/drover/drivers/containerd"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
)

// bridgeJob: one alloc in a bridge network with an exec task serving on
// 8080 and a containerd task serving on 8081, each mapped from a dynamic
// host port (%q is the busybox image).
const bridgeJob = `job "bridge" {
  group "g" {
    network {
      mode = "bridge"
      port "exec" {
        to = 8080
      }
      port "ctr" {
        to = 8081
      }
    }
    task "exec" {
      driver = "exec"
      config {
        command = "/bin/busybox"
        args    = ["httpd", "-f", "-p", "8080", "-h", "/local"]
      }
      template {
        data        = "exec in ${NOMAD_ALLOC_ID}\n"
        destination = "local/index.html"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
    task "ctr" {
      driver = "containerd"
      config {
        image   = %q
        command = "httpd"
        args    = ["-f", "-p", "8081", "-h", "/local"]
      }
      template {
        data        = "containerd in ${NOMAD_ALLOC_ID}\n"
        destination = "local/index.html"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestE2EBridgeNetwork: on a dev agent (as root, with the CNI plugins and
// a private containerd), a bridge-mode alloc's exec and containerd tasks
// share one network namespace; each answers on its host port, mapped to
// its "to" port; stopping the job removes the namespace.
func TestE2EBridgeNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containerd and the agent; -short")
	}
	drivertest.NeedRoot(t)
	drivertest.Need(t, network.Available(nil) == nil, fmt.Sprint(network.Available(nil)))
	daemon, archive := ownContainerd(t)
	image := ctrdriver.ArchivePrefix + archive

	dataDir := t.TempDir()
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p, _ := startAgentEnv(t, []string{"CONTAINERD_ADDRESS=" + daemon.Address}, "-dev", "-data-dir", dataDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)
	job, err := jobspec.Parse("bridge.hcl", fmt.Appendf(nil, bridgeJob, image), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"Job": job})
	if code := call(t, "PUT", base+"/v1/jobs", string(body), nil); code != 200 {
		t.Fatalf("register = %d", code)
	}
	var alloc api.Allocation
	defer func() {
		if t.Failed() {
			b, _ := json.Marshal(alloc.TaskStates)
			t.Logf("the bridge alloc's tasks: %s", b)
		}
	}()
	testproc.Eventually(t, 90*time.Second, "the bridge alloc running", func() bool {
		var stubs []*api.AllocListStub
		call(t, "GET", base+"/v1/job/bridge/allocations", "", &stubs)
		if len(stubs) != 1 {
			return false
		}
		call(t, "GET", base+"/v1/allocation/"+stubs[0].ID, "", &alloc)
		if alloc.ClientStatus == api.AllocClientStatusFailed {
			t.Fatal("the alloc failed")
		}
		return alloc.TaskStates["exec"] != nil && alloc.TaskStates["exec"].State == api.TaskStateRunning &&
			alloc.TaskStates["ctr"] != nil && alloc.TaskStates["ctr"].State == api.TaskStateRunning
	})
	ports := map[string]api.AllocatedPort{}
	for _, pt := range alloc.AllocatedResources.Shared.Ports {
		ports[pt.Label] = pt
	}
	for label, want := range map[string]string{"exec": "exec in " + alloc.ID, "ctr": "containerd in " + alloc.ID} {
		pt := ports[label]
		if pt.Value == 0 || pt.To == 0 || pt.Value == pt.To {
			t.Fatalf("port %s = %+v, want a host port mapped to its to", label, pt)
		}
		host := pt.HostIP
		if host == "" {
			host = "127.0.0.1"
		}
		url := "http://" + net.JoinHostPort(host, strconv.Itoa(pt.Value)) + "/"
		// httpd starting in the alloc: poll.
		testproc.Eventually(t, 20*time.Second, fmt.Sprintf("GET %s (%s)", url, label), func() bool {
			r, err := http.Get(url)
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if strings.TrimSpace(string(b)) != want {
				t.Errorf("GET %s (%s) = %q, want %q", url, label, b, want)
			}
			return true
		})
	}
	nsPath := dataDir + "/client/network/netns/" + alloc.ID
	if _, err := os.Stat(nsPath); err != nil {
		t.Fatalf("the alloc's namespace %s: %v", nsPath, err)
	}
	if code := call(t, "DELETE", base+"/v1/job/bridge", "", nil); code != 200 {
		t.Fatalf("stop = %d", code)
	}
	testproc.Eventually(t, 60*time.Second, "the namespace gone with the alloc", func() bool {
		_, err := os.Stat(nsPath)
		return os.IsNotExist(err)
	})
}
