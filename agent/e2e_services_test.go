package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
)

// servicesWeb is two replicas of busybox httpd (raw_exec) serving the
// test's directory www/<alloc index>, registered as the native service
// "web" behind an http check of /health; deployments are gated on the
// checks. %s is the www root, %s a version tag.
const servicesWeb = `job "web" {
  group "web" {
    count = 2
    network {
      port "http" {}
    }
    update {
      max_parallel     = 1
      health_check     = "checks"
      min_healthy_time = "500ms"
      healthy_deadline = "6s"
      auto_revert      = false
    }
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["%[2]s"]
      check {
        type     = "http"
        path     = "/health"
        interval = "200ms"
        timeout  = "1s"
      }
      check {
        name     = "alive"
        type     = "script"
        task     = "httpd"
        command  = "/bin/busybox"
        args     = ["pidof", "busybox"]
        interval = "500ms"
        timeout  = "2s"
      }
    }
    task "httpd" {
      driver = "raw_exec"
      config {
        command = "/bin/busybox"
        args    = ["httpd", "-f", "-p", "${NOMAD_PORT_http}", "-h", "%[1]s/${NOMAD_ALLOC_INDEX}"]
      }
      env {
        VERSION = "%[2]s"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// servicesClient renders the healthy web instances into a file and keeps
// it current (change_mode noop: the file is re-rendered in place); it
// copies its default workload identity from its env and its secrets dir
// into local/ for the test to read.
const servicesClient = `job "client" {
  group "c" {
    task "lister" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"$NOMAD_TOKEN\" > \"$NOMAD_TASK_DIR/env_token\"; cat \"$NOMAD_SECRETS_DIR/nomad_token\" > \"$NOMAD_TASK_DIR/file_token\"; exec sleep 3600"]
      }
      identity {
        env  = true
        file = true
      }
      identity {
        name = "vault"
        aud  = ["vault.io"]
        ttl  = "1h"
        file = true
      }
      template {
        data        = "{{ range nomadService \"web\" }}{{ .Address }}:{{ .Port }}\n{{ end }}"
        destination = "local/upstreams"
        change_mode = "noop"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestE2EServicesAndChecks: on a dev agent, two web replicas register
// and turn passing once their health file exists; a second job's
// template lists the healthy instances and is re-rendered when one fails
// and when it recovers; `service list|info` show them; a rolling update
// whose new instances never pass their check fails its deployment at the
// healthy deadline and stops after the first new alloc; stopping the job
// removes every registration.
func TestE2EServicesAndChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the agent; -short")
	}
	drivertest.Need(t, fileExists("/bin/busybox"), "/bin/busybox (busybox-static) is not installed")
	www := t.TempDir()
	for i := range 2 {
		writeTestFile(t, filepath.Join(www, strconv.Itoa(i), "health"), "ok\n")
	}
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := startAgent(t, "-dev", "-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)

	submit := func(name, src string) {
		t.Helper()
		job, err := jobspec.Parse(name, []byte(src), &jobspec.Options{Env: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"Job": job})
		if code := call(t, "PUT", base+"/v1/jobs", string(b), nil); code != 200 {
			t.Fatalf("register %s = %d", name, code)
		}
	}
	instances := func() []*api.ServiceRegistration {
		var regs []*api.ServiceRegistration
		call(t, "GET", base+"/v1/service/web", "", &regs)
		return regs
	}
	passing := func(regs []*api.ServiceRegistration) (n int) {
		for _, r := range regs {
			if r.Passing() {
				n++
			}
		}
		return n
	}

	submit("web.hcl", fmt.Sprintf(servicesWeb, www, "v0"))
	testproc.Eventually(t, 30*time.Second, "two passing web instances", func() bool {
		regs := instances()
		return len(regs) == 2 && passing(regs) == 2
	})
	testproc.Eventually(t, 30*time.Second, "v0 deployment successful", func() bool {
		var d *api.Deployment
		call(t, "GET", base+"/v1/job/web/deployment", "", &d)
		return d != nil && d.Status == api.DeploymentStatusSuccessful
	})
	regs := instances()
	for _, r := range regs {
		if r.Address == "" || r.Port == 0 || r.JobID != "web" || !slices.Equal(r.Tags, []string{"v0"}) {
			t.Errorf("registration %+v", r)
		}
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/health", r.Address, r.Port))
		if err != nil {
			t.Fatalf("the registered address does not answer: %v", err)
		}
		resp.Body.Close()
	}

	// The client's template lists both, then one less when its check fails.
	submit("client.hcl", servicesClient)
	var lister string
	testproc.Eventually(t, 30*time.Second, "the lister running", func() bool {
		var stubs []*api.AllocListStub
		call(t, "GET", base+"/v1/job/client/allocations", "", &stubs)
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				lister = s.ID
			}
		}
		return lister != ""
	})
	upstreams := func() []string {
		r, err := http.Get(base + "/v1/client/fs/cat/" + lister + "?path=lister/local/upstreams")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			return nil
		}
		return strings.Fields(string(b))
	}
	verifyIdentity(t, base, lister, upstreamsFile(t, base, lister, "env_token"), upstreamsFile(t, base, lister, "file_token"))

	addr := func(r *api.ServiceRegistration) string { return r.Address + ":" + strconv.Itoa(r.Port) }
	want := []string{addr(regs[0]), addr(regs[1])}
	slices.Sort(want)
	testproc.Eventually(t, 10*time.Second, "the template listing both instances", func() bool {
		got := upstreams()
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	var sick *api.ServiceRegistration
	for _, r := range regs {
		var a api.Allocation
		call(t, "GET", base+"/v1/allocation/"+r.AllocID, "", &a)
		if strings.HasSuffix(a.Name, "[0]") {
			sick = r
		}
	}
	if sick == nil {
		t.Fatal("no instance of alloc index 0")
	}
	if err := os.Remove(filepath.Join(www, "0", "health")); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 10*time.Second, "the failed instance critical and gone from the template", func() bool {
		got := upstreams()
		return passing(instances()) == 1 && len(got) == 1 && got[0] != addr(sick)
	})
	out, err := exec.Command(droverBin(t), "service", "info", "-address", base, "web").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "critical") || !strings.Contains(string(out), "passing") {
		t.Errorf("service info: %v\n%s", err, out)
	}
	out, err = exec.Command(droverBin(t), "service", "list", "-address", base).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "web") || !strings.Contains(string(out), "[v0]") {
		t.Errorf("service list: %v\n%s", err, out)
	}
	var checks map[string]*api.CheckResult
	call(t, "GET", base+"/v1/client/allocation/"+sick.AllocID+"/checks", "", &checks)
	if len(checks) != 2 {
		t.Fatalf("checks of the sick alloc: %+v", checks)
	}
	for _, c := range checks {
		switch {
		case c.Check == "alive" && (c.Status != api.CheckSuccess || c.Task != "httpd"):
			t.Errorf("script check %+v, want a success run in httpd", c)
		case c.Check != "alive" && (c.Status != api.CheckFailure || c.StatusCode != 404 || c.Service != "web"):
			t.Errorf("check result %+v, want a 404 failure", c)
		}
	}
	out, err = exec.Command(droverBin(t), "alloc", "status", "-address", base, sick.AllocID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Service Checks:") || !strings.Contains(string(out), "failure") {
		t.Errorf("alloc status: %v\n%s", err, out)
	}
	writeTestFile(t, filepath.Join(www, "0", "health"), "ok\n")
	testproc.Eventually(t, 10*time.Second, "the instance back in the template", func() bool { return len(upstreams()) == 2 })

	// v1 serves from directories without a health file: its first new
	// instance never passes, so the deployment fails at the healthy
	// deadline without replacing the second old one.
	for _, i := range []string{"0", "1"} {
		if err := os.MkdirAll(filepath.Join(www, "v1", i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v1At := time.Now()
	submit("web.hcl", fmt.Sprintf(servicesWeb, filepath.Join(www, "v1"), "v1"))
	var dep *api.Deployment
	testproc.Eventually(t, 30*time.Second, "the v1 deployment failed", func() bool {
		call(t, "GET", base+"/v1/job/web/deployment", "", &dep)
		return dep != nil && dep.JobVersion == 1 && dep.Status == api.DeploymentStatusFailed
	})
	if g := dep.TaskGroups["web"]; g == nil || g.PlacedAllocs != 1 || g.HealthyAllocs != 0 || g.UnhealthyAllocs != 1 {
		t.Errorf("v1 deployment group %+v, want one placed unhealthy alloc", dep.TaskGroups["web"])
	}
	if !strings.Contains(dep.StatusDescription, "unhealthy") {
		t.Errorf("v1 deployment: %q", dep.StatusDescription)
	}
	if took := time.Since(v1At); took < 6*time.Second {
		t.Errorf("v1 deployment failed after %s, before its healthy deadline: not for its checks", took)
	}
	for _, r := range instances() {
		if slices.Equal(r.Tags, []string{"v1"}) && r.Passing() {
			t.Errorf("a v1 instance passed: %+v", r)
		}
	}
	var stubs []*api.AllocListStub
	call(t, "GET", base+"/v1/job/web/allocations", "", &stubs)
	v0Running := 0
	for _, s := range stubs {
		if s.JobVersion == 0 && s.ClientStatus == api.AllocClientStatusRunning {
			v0Running++
		}
	}
	if v0Running != 1 {
		t.Errorf("%d v0 allocs still running, want 1 (the rollout halted)", v0Running)
	}

	if code := call(t, "DELETE", base+"/v1/job/web", "", nil); code != 200 {
		t.Fatalf("stop web = %d", code)
	}
	testproc.Eventually(t, 30*time.Second, "every web registration removed", func() bool { return len(instances()) == 0 })
	testproc.Eventually(t, 10*time.Second, "the template empty", func() bool { return len(upstreams()) == 0 })
}

// upstreamsFile reads lister/local/<name> of the lister alloc.
func upstreamsFile(t *testing.T, base, alloc, name string) string {
	t.Helper()
	var out string
	testproc.Eventually(t, 10*time.Second, "lister/local/"+name, func() bool {
		r, err := http.Get(base + "/v1/client/fs/cat/" + alloc + "?path=lister/local/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		out = strings.TrimSpace(string(b))
		return r.StatusCode == 200 && len(b) > 0
	})
	return out
}

// verifyIdentity checks the lister's default identity: the same token in
// its env and its secrets file, signed by a key of the agent's JWKS, with
// Nomad's claims.
func verifyIdentity(t *testing.T, base, alloc, envTok, fileTok string) {
	t.Helper()
	if envTok == "" || envTok != fileTok {
		t.Fatalf("NOMAD_TOKEN %q and secrets/nomad_token %q differ", envTok, fileTok)
	}
	var set jose.JSONWebKeySet
	if code := call(t, "GET", base+"/.well-known/jwks.json", "", &set); code != 200 || len(set.Keys) != 1 {
		t.Fatalf("JWKS: %d %+v", code, set)
	}
	tok, err := jwt.ParseSigned(envTok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var c api.IdentityClaims
	if err := tok.Claims(set.Keys[0].Public().Key, &c); err != nil {
		t.Fatalf("the token does not verify with the JWKS: %v", err)
	}
	if c.AllocationID != alloc || c.JobID != "client" || c.Task != "lister" || c.Namespace != "default" ||
		c.Subject != "global:default:client:c:lister:default" || !slices.Equal(c.Audience, []string{api.DefaultIdentityAudience}) {
		t.Errorf("claims %+v", c)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
