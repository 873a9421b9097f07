package supervisor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"

	"github.com/google/go-cmp/cmp"
)

// The supervisor's small JSON codec is held to encoding/json, which the
// driver side uses: random values of every type that crosses between
// them must come out the same.

func randomValue[T any](t *testing.T, r *rand.Rand) T {
	t.Helper()
	v, ok := quick.Value(reflect.TypeFor[T](), r)
	if !ok {
		t.Fatalf("quick.Value(%v) failed", reflect.TypeFor[T]())
	}
	return v.Interface().(T)
}

func TestConfigDecodeAgreesWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	full := Config{TaskName: "web", Command: "/bin/sh", Args: []string{"-c", "echo \"hi\"\n\t\\ \u00e9 \U0001F600"},
		Env: []string{"A=1"}, Cwd: "/", User: "nobody",
		Isolation: &Isolation{AllocDir: "/a", TaskDir: "/a/t", Hostname: "h", SharePID: true, ShareIPC: true, NetNS: "/run/ns",
			Mounts:  []Mount{{HostPath: "/x", TaskPath: "/y", Readonly: true}},
			Devices: []Device{{HostPath: "/dev/null", TaskPath: "/dev/n", Permissions: "r"}}, Seccomp: []byte{0, 1, 0xfe, 0xff, 2, 3, 4, 5}},
		Cgroup: &CgroupConfig{Name: "c", CPUShares: 100, ReservedCores: []uint16{0, 65535}, MemoryMB: 1 << 40, MemoryMaxMB: -1,
			PidsLimit: 4096, RestrictDevices: true, Devices: []Device{{HostPath: "/dev/zero"}}},
		LogDir: "/l", LogMaxFiles: 3, LogMaxFileSizeMB: 10, ExitFile: "/e", StateDir: "/s"}
	cases := []Config{full, {}, {Args: []string{}, Isolation: &Isolation{Mounts: []Mount{}}}}
	for range 300 {
		cases = append(cases, randomValue[Config](t, r))
	}
	for i, c := range cases {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var want Config
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeConfig(b)
		if err != nil {
			t.Fatalf("case %d: decodeConfig(%s): %v", i, b, err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Fatalf("case %d: decodeConfig(%s) (-encoding/json +got):\n%s", i, b, diff)
		}
	}
}

func TestConfigDecodeErrors(t *testing.T) {
	for _, in := range []string{
		`[]`, `{"command": 1}`, `{"args": "x"}`, `{"args": [1]}`, `{"log_max_files": 1.5}`,
		`{"cgroup": {"reserved_cores": [70000]}}`, `{"cgroup": {"memory_mb": "1"}}`, `{"cgroup": []}`,
		`{"isolation": {"mounts": [1]}}`, `{"isolation": {"share_pid": "yes"}}`, `{"command": "x"`, ``,
		`{"isolation": {"seccomp": "not base64!"}}`, `{"isolation": {"seccomp": 1}}`,
	} {
		if c, err := decodeConfig([]byte(in)); err == nil {
			t.Errorf("decodeConfig(%s) = %+v, want an error", in, c)
		}
		var c Config
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("encoding/json accepts %s: the cases must be errors for both", in)
		}
	}
}

func TestReportsAgreeWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for range 300 {
		res := randomValue[Result](t, r)
		var gotRes Result
		if err := json.Unmarshal(res.AppendJSON(nil), &gotRes); err != nil {
			t.Fatalf("Result %s: %v", res.AppendJSON(nil), err)
		}
		st := randomValue[Started](t, r)
		var gotSt Started
		if err := json.Unmarshal(st.AppendJSON(nil), &gotSt); err != nil {
			t.Fatalf("Started %s: %v", st.AppendJSON(nil), err)
		}
		rep := randomValue[initReport](t, r)
		gotRep, err := readInitReport(bufio.NewReader(bytes.NewReader(append(rep.appendJSON(nil), '\n'))))
		if err != nil {
			t.Fatalf("initReport %s: %v", rep.appendJSON(nil), err)
		}
		// quick makes valid UTF-8 strings, which must come back as they are.
		if diff := cmp.Diff(res, gotRes); diff != "" {
			t.Fatalf("Result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(st, gotSt); diff != "" {
			t.Fatalf("Started (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(rep, gotRep, cmp.AllowUnexported(initReport{})); diff != "" {
			t.Fatalf("initReport (-want +got):\n%s", diff)
		}
	}
}
