package executor

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch of this host's native syscalls.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks the syscall numbers of the x32 ABI, which shares
// AUDIT_ARCH_X86_64 with native calls: the filter refuses them.
const x32Bit = 0x40000000
