//go:build ignore

// gensysnum writes sysnum_linux_<arch>.go: the kernel's syscall names
// (lowercase, as seccomp profiles name them) mapped to x/sys/unix's
// SYS_ constants for arch. Run by go generate (seccomp.go).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run gensysnum.go ARCH")
	}
	arch := os.Args[1]
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		log.Fatalf("go list golang.org/x/sys: %v", err)
	}
	src := "zsysnum_linux_" + arch + ".go"
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "unix", src))
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "// Code generated from golang.org/x/sys/unix/%s; DO NOT EDIT.\n\npackage executor\n\n", src)
	fmt.Fprintf(&out, "import \"golang.org/x/sys/unix\"\n\n// sysNums maps the kernel's syscall names to their numbers on %s.\nvar sysNums = map[string]uint32{\n", arch)
	for _, m := range regexp.MustCompile(`(?m)^\s*SYS_(\w+)\s*=`).FindAllStringSubmatch(string(b), -1) {
		fmt.Fprintf(&out, "\t%q: unix.SYS_%s,\n", strings.ToLower(m[1]), m[1])
	}
	out.WriteString("}\n")
	code, err := format.Source(out.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("sysnum_linux_"+arch+".go", code, 0o644); err != nil {
		log.Fatal(err)
	}
}
