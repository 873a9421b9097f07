package jobspec_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
	"github.com/google/go-cmp/cmp"
)

// The files of testdata/nomadcompat are job files written the way
// Nomad's jobspec documentation describes each block and attribute
// (drover's own, not Nomad's examples). Every one is a file Nomad
// accepts, so each must parse, to the key fields written here by hand,
// with exactly the warnings listed: what drover will not run or
// ignores, at its place.

// keyFields is what "parses to the same key fields" compares: the job's
// ID and type, then each group's name and count and each task's name,
// driver, CPU (MHz) and memory (MB), cores and devices.
func keyFields(j *api.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", j.ID, j.Type)
	for _, tg := range j.TaskGroups {
		fmt.Fprintf(&b, " | %s x%d:", tg.Name, tg.Count)
		for _, t := range tg.Tasks {
			fmt.Fprintf(&b, " %s/%s", t.Name, t.Driver)
			if r := t.Resources; r != nil {
				fmt.Fprintf(&b, " %d/%d", r.CPU, r.MemoryMB)
				if r.Cores > 0 {
					fmt.Fprintf(&b, " cores=%d", r.Cores)
				}
				for _, d := range r.Devices {
					fmt.Fprintf(&b, " +%d %s", d.Count, d.Name)
				}
			}
		}
	}
	return b.String()
}

// parseCompat parses a file of testdata/nomadcompat with an empty
// environment and returns the job and its warnings as line:col: message.
func parseCompat(t *testing.T, name string) (*api.Job, []string) {
	t.Helper()
	var warns []string
	job, err := jobspec.ParseFile(filepath.Join("testdata", "nomadcompat", name), &jobspec.Options{Env: []string{},
		Warn: func(d jobspec.Diagnostic) {
			warns = append(warns, fmt.Sprintf("%d:%d: %s", d.Line, d.Column, d.Message))
		}})
	if err != nil {
		t.Fatalf("%s: Nomad accepts this file; drover refused it:\n%v", name, err)
	}
	return job, warns
}

const (
	ignored      = " is not supported by drover yet: accepted and ignored"
	blockIgnored = " block is not supported by drover yet: accepted and ignored"
)

func notRun(driver string) string { return `drover does not run driver "` + driver + `"` }

func TestNomadCompatCorpus(t *testing.T) {
	tests := []struct {
		file, want string
		warns      []string // each a prefix of one warning, in order
	}{
		{"affinity_spread.hcl", "spread-out service | g x10: t/raw_exec 100/300", nil},
		{"artifact.hcl", "fetcher service | g x1: t/exec 100/300", []string{`22:9: "chown"` + ignored}},
		{"bridge_docker.hcl", "echo service | echo x2: server/docker 50/32", []string{"30:16: " + notRun("docker")}},
		{"client_disconnect_attrs.hcl", "edge-old service | a x1: t/exec 100/300 | b x1: t/exec 100/300",
			[]string{`13:5: "prevent_reschedule_on_lost"` + ignored}},
		{"cni_network.hcl", "cni-net service | g x1: t/exec 100/300", []string{`5:7: "cni"` + blockIgnored}},
		{"constraints.hcl", "placed service | g x3: t/exec 100/300", nil},
		{"containerd_bridge.hcl", "bridged service | g x1: httpd/containerd 100/300 sidecar/exec 100/300", nil},
		{"cron_seconds.hcl", "ticker batch | tick x1: tick/raw_exec 100/300", nil},
		{"cron_single.hcl", "invoices batch | g x1: send/exec 100/300", nil},
		{"cron_year.hcl", "year-end batch | close x1: ledger/exec 100/300", nil},
		{"csi_plugin.hcl", "csi-nodes system | nodes x1: plugin/docker 50/64",
			[]string{"6:16: " + notRun("docker"), `12:7: "csi_plugin"` + blockIgnored}},
		{"device_first_available.hcl", "infer batch | g x1: serve/containerd 100/2048 +2 nvidia/gpu",
			[]string{`27:11: "first_available" options after the first` + " are not supported by drover yet: accepted and ignored"}},
		{"disconnect.hcl", "edge service | g x1: t/raw_exec 100/300", []string{`5:7: "replace"` + ignored, `6:7: "reconcile"` + ignored}},
		{"dynamic_blocks.hcl", "sharded service | shard-a x1: worker/exec 100/300 | shard-b x1: worker/exec 100/300 | shard-c x1: worker/exec 100/300", nil},
		{"ephemeral_disk.hcl", "scratchy service | g x1: t/exec 100/64", nil},
		{"hcl_functions.hcl", "functional service | g x2: t/raw_exec 100/300", nil},
		{"group_max_run.hcl", "backfill batch | load x1: copy/raw_exec 100/300", []string{`7:5: "max_run_duration"` + ignored}},
		{"heredoc_script.hcl", "script batch | g x1: loop/raw_exec 100/300", nil},
		{"identity.hcl", "ided service | g x1: t/exec 100/300", []string{`17:9: "change_mode"` + ignored}},
		{"java_podman.hcl", "mixed-drivers service | jvm x1: app/java 100/300 | pods x1: cache/podman 100/300",
			[]string{"4:16: " + notRun("java"), "16:16: " + notRun("podman")}},
		{"job_basic.hcl", "inventory service | api x2: server/raw_exec 250/128", nil},
		{"job_id_attr.hcl", "billing-v2 service | worker x1: run/exec 100/300", nil},
		{"job_id_only.hcl", "report-2026 batch | g x1: t/raw_exec 100/300", nil},
		{"kill_leader_shutdown.hcl", "graceful service | g x1: leader/raw_exec 100/300 helper/raw_exec 100/300", nil},
		{"kitchen_sink.hcl", "shop service | frontend x3: next/docker 300/256 | api x2: api/containerd 500/512", []string{"43:16: " + notRun("docker")}},
		{"lifecycle.hcl", "app-with-hooks service | app x1: migrate-db/exec 100/300 log-shipper/raw_exec 100/300 announce/exec 100/300 cleanup/exec 100/300 main/exec 100/300", nil},
		{"logs.hcl", "chatty service | g x1: a/raw_exec 100/300 b/raw_exec 100/300", nil},
		{"max_run.hcl", "nightly-etl batch | etl x1: extract/raw_exec 100/300", nil},
		{"meta_env_forms.hcl", "forms service | g x1: t/exec 100/300", nil},
		{"migrate.hcl", "stateful service | a x1: t/exec 100/300 | b x1: t/exec 100/300", nil},
		{"multiregion.hcl", "global-api service | api x0: api/exec 100/300", nil},
		{"network_ports_dns.hcl", "netty service | g x1: t/exec 100/300", nil},
		{"parameterized.hcl", "transcode batch | g x1: ffmpeg/exec 100/300", nil},
		{"qemu.hcl", "vm service | vm x1: vm/qemu 1000/1024", nil},
		{"resources_device.hcl", "train batch | g x1: train/containerd 0/16384 cores=8 +2 nvidia/gpu", []string{`13:9: "numa"` + blockIgnored}},
		{"restart_reschedule.hcl", "flaky batch | g x1: t/exec 100/300", nil},
		{"scaling_count.hcl", "frontend service | web x3: nginx/containerd 200/96", nil},
		{"scaling_nomin.hcl", "elastic service | g x1: t/exec 100/300", nil},
		{"scaling_with_count.hcl", "queue-workers service | workers x4: consume/raw_exec 100/300", nil},
		{"service_checks.hcl", "checked service | g x1: app/exec 100/300 db/exec 100/300",
			[]string{`15:7: "enable_tag_override"` + ignored, `36:9: "initial_status"` + ignored}},
		{"sysbatch.hcl", "patch-check sysbatch | check x1: scan/raw_exec 100/300", nil},
		{"system_job.hcl", "node-exporter system | exporter x1: exporter/raw_exec 50/48", nil},
		{"task_scaling.hcl", "sized service | g x1: t/exec 500/256", []string{`13:7: "scaling"` + blockIgnored, `21:7: "scaling"` + blockIgnored}},
		{"task_secret.hcl", "mailer service | g x1: send/exec 100/300", []string{`11:7: "secret"` + blockIgnored}},
		{"template_full.hcl", "configured service | g x1: t/exec 100/300",
			[]string{`16:9: "error_on_missing_key"` + ignored, `17:9: "wait"` + blockIgnored, `34:9: "change_script"` + blockIgnored}},
		{"top_task.hcl", "report batch | collect x1: collect/raw_exec 100/64 | publish x1: upload/exec 100/300", nil},
		{"top_tasks_two.hcl", "pair batch | first x1: first/exec 100/300 | second x1: second/raw_exec 100/300", nil},
		{"ui_action_schedule.hcl", "dashboarded service | g x1: t/exec 100/300",
			[]string{`2:3: "ui"` + blockIgnored, `15:7: "action"` + blockIgnored, `19:7: "schedule"` + blockIgnored}},
		{"undefined_interp.hcl", "interp service | g x1: t/raw_exec 100/300",
			[]string{`15:23: Unknown name "greeting": kept as the literal text ${greeting}`, `23:12: Unknown name "app_mode": kept as the literal text ${app_mode}`}},
		{"update_canary.hcl", "storefront service | web x4: web/containerd 100/300", nil},
		{"variables_locals.hcl", "vars service | g x2: t/containerd 100/300", nil},
		{"vault_consul.hcl", "secretive service | g x1: t/exec 100/300",
			[]string{`3:3: "vault_token"` + ignored, `5:5: "consul"` + blockIgnored, `13:7: "vault"` + blockIgnored, `17:7: "consul"` + blockIgnored}},
		{"volume_docker.hcl", "postgres service | db x1: postgres/docker 500/1024", []string{"11:16: " + notRun("docker")}},
		{"volume_exec_dirs.hcl", "cache service | cache x1: warm/exec 100/300", nil},
		{"volume_options.hcl", "mounted service | g x1: t/exec 100/300",
			[]string{`9:7: "mount_options"` + blockIgnored, `23:9: "selinux_label"` + ignored}},
	}
	files, err := filepath.Glob("testdata/nomadcompat/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	parsed := 0
	for _, tt := range tests {
		listed[tt.file] = true
		t.Run(strings.TrimSuffix(tt.file, ".hcl"), func(t *testing.T) {
			job, warns := parseCompat(t, tt.file)
			got := keyFields(job)
			if got != tt.want {
				t.Errorf("key fields\n got %s\nwant %s", got, tt.want)
			}
			ok := len(warns) == len(tt.warns)
			for i := 0; ok && i < len(warns); i++ {
				ok = strings.HasPrefix(warns[i], tt.warns[i])
			}
			if !ok {
				t.Errorf("warnings\n got %q\nwant prefixes %q", warns, tt.warns)
			}
			if ok && got == tt.want {
				parsed++
			}
		})
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no row in the table", f)
		}
	}
	if len(files) < 40 || parsed != len(files) {
		t.Errorf("%d of %d files parsed to the expected key fields and warnings (want all, and at least 40)", parsed, len(files))
	}
	t.Logf("nomadcompat corpus: %d/%d parsed to the expected key fields and warnings", parsed, len(files))
}

// Each cause measured against Nomad's own job files now parses, to what
// Nomad makes of it.
func TestNomadCompatCauses(t *testing.T) {
	t.Run("bridge network and volume_mount for a driver drover does not run", func(t *testing.T) {
		job, _ := parseCompat(t, "bridge_docker.hcl")
		if n := job.TaskGroups[0].Networks; len(n) != 1 || n[0].Mode != "bridge" || n[0].DynamicPorts[0].To != 5678 {
			t.Errorf("networks = %+v, want one bridge network with port http to 5678", n)
		}
		job, _ = parseCompat(t, "volume_docker.hcl")
		got := job.TaskGroups[0].Tasks[0].VolumeMounts
		want := []*api.VolumeMount{{Volume: "pgdata", Destination: "/var/lib/postgresql/data"},
			{Volume: "pgdata", Destination: "${NOMAD_TASK_DIR}/snapshot", ReadOnly: true}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("volume mounts (-want +got):\n%s", diff)
		}
	})
	t.Run("max_run_duration", func(t *testing.T) {
		job, _ := parseCompat(t, "max_run.hcl")
		if got := job.TaskGroups[0].Tasks[0].MaxRunDuration; got != 2*time.Hour {
			t.Errorf("MaxRunDuration = %v, want 2h", got)
		}
	})
	t.Run("device first_available", func(t *testing.T) {
		// The first alternative's count and constraint join the device's
		// own constraint; the second alternative is dropped.
		job, _ := parseCompat(t, "device_first_available.hcl")
		dev := job.TaskGroups[0].Tasks[0].Resources.Devices[0]
		var got []string
		for _, c := range dev.Constraints {
			got = append(got, c.LTarget+" "+c.Operand+" "+c.RTarget)
		}
		want := []string{"${device.attr.memory} >= 16 GiB", "${device.model} = H100"}
		if dev.Count != 2 || !slices.Equal(got, want) {
			t.Errorf("device = count %d constraints %q, want count 2 constraints %q", dev.Count, got, want)
		}
	})
	t.Run("secret reference kept for the client", func(t *testing.T) {
		job, _ := parseCompat(t, "task_secret.hcl")
		if got := job.TaskGroups[0].Tasks[0].Env["SMTP_PASSWORD"]; got != "${secret.smtp.password}" {
			t.Errorf("env SMTP_PASSWORD = %q, want ${secret.smtp.password} kept", got)
		}
	})
	t.Run("count omitted with scaling", func(t *testing.T) {
		for file, want := range map[string]int{"scaling_count.hcl": 3, "scaling_nomin.hcl": 1, "scaling_with_count.hcl": 4} {
			job, _ := parseCompat(t, file)
			tg := job.TaskGroups[0]
			if tg.Count != want || tg.Scaling == nil || int(tg.Scaling.Min) > tg.Count {
				t.Errorf("%s: count %d scaling %+v, want count %d within scaling", file, tg.Count, tg.Scaling, want)
			}
		}
	})
	t.Run("task directly under job", func(t *testing.T) {
		job, _ := parseCompat(t, "top_task.hcl")
		tg := job.TaskGroups[0]
		if tg.Name != "collect" || tg.Count != 1 || len(tg.Tasks) != 1 || tg.Tasks[0].Name != "collect" ||
			tg.RestartPolicy == nil || tg.ReschedulePolicy == nil {
			t.Errorf("first group = %+v, want group collect (count 1, defaults) holding task collect", tg)
		}
	})
	t.Run("undefined names kept literally", func(t *testing.T) {
		job, _ := parseCompat(t, "undefined_interp.hcl")
		task := job.TaskGroups[0].Tasks[0]
		if got := task.Env["GREETING"]; got != "${greeting}" {
			t.Errorf("env GREETING = %q, want ${greeting}", got)
		}
		if got := task.Env["DATA_DIR"]; got != "${NOMAD_TASK_DIR}/data" {
			t.Errorf("env DATA_DIR = %q", got)
		}
		wantTmpl := "listen = ${NOMAD_ADDR_http}\nnode   = ${node.unique.name}\nmode   = ${app_mode}\n"
		if got := task.Templates[0].EmbeddedTmpl; got != wantTmpl {
			t.Errorf("template data = %q, want %q", got, wantTmpl)
		}
		if got := task.Config["args"]; !slices.Equal(got.([]any), []any{"-c", "echo ${node.unique.id} ${attr.kernel.name} ${meta.rack}"}) {
			t.Errorf("args = %v", got)
		}
		job, warns := parseCompat(t, "heredoc_script.hcl")
		if got := job.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl; !strings.Contains(got, `echo "round ${i} on ${HOSTNAME} in ${NOMAD_ALLOC_DIR}"`) || len(warns) != 0 {
			t.Errorf("script template = %q, warnings %q; want $${i} unescaped and no warning", got, warns)
		}
	})
	t.Run("Nomad's cron grammar", func(t *testing.T) {
		after := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC) // a Monday
		for file, want := range map[string]time.Time{
			// 30 6 * * MON-FRI * in New York: Tuesday 06:30 EST.
			"cron_year.hcl":    time.Date(2026, 12, 8, 11, 30, 0, 0, time.UTC),
			"cron_seconds.hcl": after.Add(30 * time.Second),
			"cron_single.hcl":  time.Date(2026, 12, 31, 4, 0, 0, 0, time.UTC),
		} {
			job, _ := parseCompat(t, file)
			got, err := job.Periodic.Next(after)
			if err != nil || !got.Equal(want) {
				t.Errorf("%s: next launch %v, %v; want %v", file, got, err, want)
			}
		}
	})
	t.Run("NOMAD_*_DIR in a volume_mount destination", func(t *testing.T) {
		job, _ := parseCompat(t, "volume_exec_dirs.hcl")
		var got []string
		for _, m := range job.TaskGroups[0].Tasks[0].VolumeMounts {
			got = append(got, m.Destination)
		}
		if want := []string{"${NOMAD_ALLOC_DIR}/shared", "${NOMAD_SECRETS_DIR}/certs"}; !slices.Equal(got, want) {
			t.Errorf("destinations %q, want %q kept for the client", got, want)
		}
	})
}

// The blocks and attributes drover decodes from Nomad's grammar land in
// the model, not only parse.
func TestNomadCompatFields(t *testing.T) {
	job, _ := parseCompat(t, "job_basic.hcl")
	if job.Region != "eu" || job.Namespace != "shop" || job.Priority != 70 || job.NodePool != "general" ||
		!slices.Equal(job.Datacenters, []string{"eu-west-1a", "eu-west-1b"}) || job.Meta["owner"] != "team-inventory" {
		t.Errorf("job_basic: %+v", job)
	}
	job, _ = parseCompat(t, "job_id_attr.hcl")
	if job.ID != "billing-v2" || job.Name != "Billing (v2)" {
		t.Errorf("job_id_attr: ID %q Name %q", job.ID, job.Name)
	}
	job, _ = parseCompat(t, "job_id_only.hcl")
	if job.ID != "report-2026" || job.Name != "nightly-report" {
		t.Errorf("job_id_only: ID %q Name %q, want report-2026 named nightly-report", job.ID, job.Name)
	}
	job, _ = parseCompat(t, "artifact.hcl")
	arts := job.TaskGroups[0].Tasks[0].Artifacts
	if len(arts) != 3 || arts[1].GetterHeaders["Authorization"] != "Bearer placeholder" || arts[2].GetterOptions["ref"] != "v2" ||
		!strings.HasPrefix(arts[0].GetterOptions["checksum"], "sha256:") {
		t.Errorf("artifacts: %+v %+v %+v", arts[0], arts[1], arts[2])
	}
	job, _ = parseCompat(t, "service_checks.hcl")
	svcs := job.TaskGroups[0].Services
	if len(svcs) != 3 || svcs[0].Meta["protocol"] != "http" || len(svcs[0].Checks) != 2 ||
		svcs[0].Checks[1].Header["X-Probe"][0] != "1" || svcs[0].Checks[1].CheckRestart.Limit != 3 ||
		svcs[1].Checks[0].GRPCService != "health.v1" || svcs[2].TaskName != "db" || svcs[2].Checks[0].Type != "script" {
		t.Errorf("services: %+v", svcs)
	}
	job, _ = parseCompat(t, "meta_env_forms.hcl")
	task := job.TaskGroups[0].Tasks[0]
	if job.Meta["team.name"] != "platform" || job.TaskGroups[0].Meta["shard"] != "3" || task.Env["discovery.type"] != "single-node" ||
		task.Env["RATE"] != "1.5" || task.Env["DEBUG"] != "true" || task.Meta["version"] != "1.4.2" {
		t.Errorf("meta/env: job %v group %v env %v meta %v", job.Meta, job.TaskGroups[0].Meta, task.Env, task.Meta)
	}
	job, _ = parseCompat(t, "variables_locals.hcl")
	task = job.TaskGroups[0].Tasks[0]
	if !slices.Equal(job.Datacenters, []string{"dc1", "dc2"}) || task.Config["image"] != "busybox:1.37" ||
		task.Env["NAME"] != "WEB-DC1-DC2" || task.Config["args"].([]any)[0] != "${NOMAD_ALLOC_DIR}/data" {
		t.Errorf("variables: datacenters %v config %v env %v", job.Datacenters, task.Config, task.Env)
	}
	job, _ = parseCompat(t, "lifecycle.hcl")
	var hooks []string
	for _, t := range job.TaskGroups[0].Tasks {
		if t.Lifecycle != nil {
			hooks = append(hooks, fmt.Sprintf("%s:%v", t.Lifecycle.Hook, t.Lifecycle.Sidecar))
		}
	}
	if want := []string{"prestart:false", "prestart:true", "poststart:false", "poststop:false"}; !slices.Equal(hooks, want) {
		t.Errorf("hooks %v, want %v", hooks, want)
	}
	job, warns := parseCompat(t, "hcl_functions.hcl")
	task = job.TaskGroups[0].Tasks[0]
	ports := job.TaskGroups[0].Networks[0].ReservedPorts
	if got := task.Config["args"]; !slices.Equal(got.([]any), []any{"--admin=8081", "--http=8080"}) || len(warns) != 0 ||
		task.Env["UPPER"] != "X-${NOMAD_JOB_NAME}" || job.Meta["version"] != "1.2.3" || len(ports) != 2 {
		t.Errorf("hcl_functions: args %v env %v meta %v ports %v warnings %q", got, task.Env, job.Meta, ports, warns)
	}
	job, _ = parseCompat(t, "network_ports_dns.hcl")
	n := job.TaskGroups[0].Networks[0]
	if n.Hostname != "netty-${NOMAD_ALLOC_INDEX}" || n.ReservedPorts[0].Value != 8080 || n.ReservedPorts[0].HostNetwork != "public" ||
		n.DynamicPorts[0].To != 9100 || n.DNS == nil || n.DNS.Options[0] != "ndots:2" {
		t.Errorf("network: %+v dns %+v", n, n.DNS)
	}
}

// Nomad's functions beyond cty's standard library.
func TestNomadFunctions(t *testing.T) {
	src := `job "f" {
  meta = {
    md5  = md5("abc")
    sha1 = sha1("abc")
    sha2 = sha256("abc")
    url  = urlencode("a b&c")
    v5   = uuidv5("dns", "www.example.com")
    v4   = strlen(uuidv4())
    base = basename("/a/b/c.txt")
    dir  = dirname("/a/b/c.txt")
    rev  = reverse("abc")
    revl = join(",", reverse(["a", "b"]))
  }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`
	job, err := jobspec.Parse("f.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"md5": "900150983cd24fb0d6963f7d28e17f72", "sha1": "a9993e364706816aba3e25717850c26c9cd0d89d",
		"sha2": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "url": "a+b%26c",
		"v5": "2ed6657d-e927-568b-95e1-2665a8aea6a2", "v4": "36", "base": "c.txt", "dir": "/a/b", "rev": "cba", "revl": "b,a",
	}
	if diff := cmp.Diff(want, job.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
}
