package executor

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch of this host's native syscalls.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit: arm64 has no second ABI under its arch value.
const x32Bit = 0
