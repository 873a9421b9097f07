//go:build !(linux && (amd64 || arm64))

package executor

// No syscall table here: taskFilter fails and the exec driver starts no
// task (it never runs one without its seccomp filter).
const (
	auditArch = 0
	x32Bit    = 0
)

var sysNums map[string]uint32
