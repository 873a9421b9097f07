package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
)

// testGang is three members on two nodes: ranks 0 and 2 share 10.0.0.5.
func testGang(rank int) *api.AllocGang {
	return &api.AllocGang{ID: "workers", Size: 3, Rank: rank, LeaderAddr: "10.0.0.5:29500", Members: []api.GangMember{
		{Rank: 0, AllocID: "a0", Name: "train.workers[0]", NodeID: "n0", Address: "10.0.0.5"},
		{Rank: 1, AllocID: "a1", Name: "train.workers[1]", NodeID: "n1", Address: "10.0.0.6"},
		{Rank: 2, AllocID: "a2", Name: "train.workers[2]", NodeID: "n0", Address: "10.0.0.5"},
	}}
}

func TestGangHosts(t *testing.T) {
	got := string(GangHosts("train", testGang(1)))
	want := `# drover gang "workers" of job "train": 3 members (written by the client)
10.0.0.5 train-workers-0 train.workers[0]
10.0.0.6 train-workers-1 train.workers[1]
10.0.0.5 train-workers-2 train.workers[2]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("10.0.0.5 slots=2\n10.0.0.6 slots=1\n", string(GangHostfile(testGang(0)))); diff != "" {
		t.Errorf("hostfile (-want +got):\n%s", diff)
	}
}

func TestGangHostName(t *testing.T) {
	for _, c := range []struct {
		job, gang string
		rank      int
		want      string
	}{
		{"train", "job", 3, "train-job-3"},
		{"batch/dispatch-1700-ab", "w_1", 0, "batch-dispatch-1700-ab-w-1-0"},
		{"a b#c", "g", 1, "a-b-c-g-1"},
	} {
		if got := GangHostName(c.job, c.gang, c.rank); got != c.want {
			t.Errorf("GangHostName(%q, %q, %d) = %q, want %q", c.job, c.gang, c.rank, got, c.want)
		}
	}
	// A member address with a port, or none, and a name with blanks.
	g := &api.AllocGang{ID: "g", Size: 2, Members: []api.GangMember{{Rank: 0, Name: "j.g [0]", Address: "[fd00::1]:4647"}, {Rank: 1}}}
	if got, want := string(GangHosts("j", g)), "# drover gang \"g\" of job \"j\": 2 members (written by the client)\nfd00::1 j-g-0 j.g-[0]\n"; got != want {
		t.Errorf("hosts = %q, want %q", got, want)
	}
	if got := string(GangHostfile(g)); got != "fd00::1 slots=1\n" {
		t.Errorf("hostfile = %q, want %q", got, "fd00::1 slots=1\n")
	}
}

func TestWriteGangFiles(t *testing.T) {
	dir := t.TempDir()
	if err := BuildAllocDir(dir, []string{"main"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteGangFiles(dir, "train", nil); err != nil {
		t.Fatalf("nil gang: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "alloc", "gang")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("nil gang made alloc/gang (stat: %v)", err)
	}
	if err := WriteGangFiles(dir, "train", testGang(0)); err != nil {
		t.Fatal(err)
	}
	// Written twice: the second replaces the first.
	if err := WriteGangFiles(dir, "train", testGang(0)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"hosts": GangHosts("train", testGang(0)), "hostfile": GangHostfile(testGang(0))} {
		p := filepath.Join(dir, "alloc", "gang", name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode = %v (%v), want 0644", name, fi.Mode(), err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "alloc", "gang"))
	if len(ents) != 2 {
		t.Errorf("alloc/gang holds %d entries, want hosts and hostfile only", len(ents))
	}
}

// A task that plants links in the shared alloc dir can't make the agent
// write outside it: a linked gang dir is refused, a linked file replaced.
func TestWriteGangFilesFollowsNoLinks(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := BuildAllocDir(dir, []string{"main"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "alloc", "gang")); err != nil {
		t.Fatal(err)
	}
	err := WriteGangFiles(dir, "train", testGang(0))
	if !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		t.Errorf("linked alloc/gang: err = %v, want ENOTDIR or ELOOP", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "hosts")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hosts written through the link (stat: %v)", err)
	}

	dir2 := t.TempDir()
	if err := BuildAllocDir(dir2, []string{"main"}); err != nil {
		t.Fatal(err)
	}
	gang := filepath.Join(dir2, "alloc", "gang")
	if err := os.Mkdir(gang, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hosts", ".hostfile.tmp"} {
		if err := os.Symlink(victim, filepath.Join(gang, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteGangFiles(dir2, "train", testGang(0)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q, want it untouched", b)
	}
	if fi, err := os.Lstat(filepath.Join(gang, "hosts")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("hosts = %v (%v), want a regular file in place of the link", fi.Mode(), err)
	}
}

// The runner writes the files before the tasks start, at the path the
// task's DROVER_GANG_HOSTS names.
func TestRunWritesGangFiles(t *testing.T) {
	a := newAlloc(api.JobTypeBatch, nil, task("main", nil))
	a.Gang = testGang(1)
	h := newHarness(t, a)
	h.waitState("main", api.TaskStateRunning)
	ids := h.procs.Running("main")
	if len(ids) != 1 {
		t.Fatalf("running main tasks = %v, want one", ids)
	}
	env := h.procs.Config(ids[0]).Env
	if env["DROVER_GANG_RANK"] != "1" || env["DROVER_GANG_SIZE"] != "3" {
		t.Errorf("rank/size = %q/%q, want 1/3", env["DROVER_GANG_RANK"], env["DROVER_GANG_SIZE"])
	}
	got, err := os.ReadFile(env["DROVER_GANG_HOSTS"])
	if err != nil {
		t.Fatalf("read DROVER_GANG_HOSTS: %v", err)
	}
	if diff := cmp.Diff(string(GangHosts("web", a.Gang)), string(got)); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	// A new placement of the gang (say, re-placed members) rewrites them.
	b := *a
	b.Gang = testGang(1)
	b.Gang.Members[0].Address = "10.0.0.9"
	h.ar.Update(&b)
	got, err = os.ReadFile(env["DROVER_GANG_HOSTFILE"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("10.0.0.9 slots=1\n10.0.0.6 slots=1\n10.0.0.5 slots=1\n", string(got)); diff != "" {
		t.Errorf("hostfile after update (-want +got):\n%s", diff)
	}
}
