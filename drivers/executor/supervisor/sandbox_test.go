package supervisor

import (
	"math/rand"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestFilterEncoding(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	prog := make([]unix.SockFilter, 300)
	for i := range prog {
		prog[i] = unix.SockFilter{Code: uint16(r.Uint32()), Jt: uint8(r.Uint32()), Jf: uint8(r.Uint32()), K: r.Uint32()}
	}
	got, err := DecodeFilter(EncodeFilter(prog))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prog, got); diff != "" {
		t.Errorf("decode(encode) (-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{nil, make([]byte, 7), make([]byte, 8*4097)} {
		if _, err := DecodeFilter(bad); err == nil {
			t.Errorf("DecodeFilter(%d bytes) accepted", len(bad))
		}
	}
}

func TestSandboxArgs(t *testing.T) {
	filter := EncodeFilter([]unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}})
	for _, cred := range []*syscall.Credential{{Uid: 65534, Gid: 65534}, {Uid: 1, Gid: 2, Groups: []uint32{3, 4}}} {
		args := FormatSandboxArgs(cred, filter, []string{"/bin/sh", "-c", "echo --"})
		gotCred, prog, cmd, err := parseSandboxArgs(args)
		if err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		if diff := cmp.Diff(cred, gotCred); diff != "" {
			t.Errorf("cred (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"/bin/sh", "-c", "echo --"}, cmd); diff != "" {
			t.Errorf("command (-want +got):\n%s", diff)
		}
		if len(prog) != 1 {
			t.Errorf("filter of %d instructions, want 1", len(prog))
		}
	}
	for _, bad := range [][]string{{}, {"1:2", "AAAAAAAAAAA=", "x", "cmd"}, {"1", "AAAAAAAAAAA=", "--", "cmd"},
		{"1:x", "AAAAAAAAAAA=", "--", "cmd"}, {"1:2", "%%", "--", "cmd"}, {"1:2", "", "--", "cmd"}} {
		if _, _, _, err := parseSandboxArgs(bad); err == nil {
			t.Errorf("parseSandboxArgs(%q) accepted", bad)
		}
	}
}
