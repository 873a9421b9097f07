// Command probe tests a task's sandbox from inside (built by
// drivertest.SandboxProbe; standard library only, so it runs anywhere).
//
//	probe add_key   add a key to the process keyring: "add_key=ok" or
//	                "add_key=EPERM" (the default seccomp profile denies it;
//	                without a filter any user may)
//	probe net       a TCP round trip on loopback: "net=ok" or the error
//	probe euid      "euid=<effective uid>" (of the setuid-root copy,
//	                suid-probe, where no mount or no_new_privs stops it)
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

func main() {
	for _, a := range os.Args[1:] {
		switch a {
		case "add_key":
			fmt.Println("add_key=" + addKey())
		case "net":
			fmt.Println("net=" + roundTrip())
		case "euid":
			fmt.Printf("euid=%d\n", os.Geteuid())
		default:
			fmt.Fprintln(os.Stderr, "probe: unknown check", a)
			os.Exit(2)
		}
	}
}

func addKey() string {
	typ, _ := syscall.BytePtrFromString("user")
	desc, _ := syscall.BytePtrFromString("drover-probe")
	payload := []byte("x")
	const keySpecProcessKeyring = -2
	kr := int32(keySpecProcessKeyring)
	_, _, errno := syscall.Syscall6(syscall.SYS_ADD_KEY, uintptr(unsafe.Pointer(typ)), uintptr(unsafe.Pointer(desc)),
		uintptr(unsafe.Pointer(&payload[0])), uintptr(len(payload)), uintptr(kr), 0)
	switch errno {
	case 0:
		return "ok"
	case syscall.EPERM:
		return "EPERM"
	}
	return fmt.Sprintf("errno %d (%v)", int(errno), errno)
}

func roundTrip() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err.Error()
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		return err.Error()
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil {
		return err.Error()
	}
	if string(b) != "ping" {
		return fmt.Sprintf("echoed %q", b)
	}
	return "ok"
}
