// Package qemu is the "qemu" task driver: it boots a virtual machine
// with qemu-system-x86_64 under the executor's supervisor (the hidden
// `drover executor` process, which outlives the agent, copies the guest's
// serial console — qemu's stdout — into the task's rotated stdout log and
// records qemu's exit) and controls it over QMP (github.com/digitalocean/
// go-qemu) on a unix socket in the task dir, or in a short directory under
// os.TempDir() when that path would not fit a unix socket address.
//
// Job config: image_path (qcow2 or raw, attached through a per-alloc qcow2
// overlay in the task dir so the image is never written) or kernel +
// initrd + kernel_args for direct boot; accelerator (kvm when /dev/kvm is
// usable, else tcg); machine; graceful_shutdown (default true); port_map
// (group port label -> guest port, user-mode network host forwards);
// args (extra qemu options, each allowed by the client's args_allowlist);
// drives (more overlaid disks); vfio_devices (host PCI devices passed
// through with vfio-pci, each listed in the client's vfio_allowlist).
// Memory is the task's MemoryMB; vCPUs are
// max(1, reserved cores or CpuShares/1000).
//
// Lifecycle: StartTask returns once QMP query-status says "running".
// StopTask presses the ACPI power button (system_powerdown, repeated while
// waiting), sends QMP quit after the kill timeout, and SIGKILL after a
// further grace; a quit VM reports SIGTERM, a killed one SIGKILL.
// RecoverTask reattaches through the supervisor's saved PIDs and the QMP
// socket. Stats are the qemu process's (its cgroup's when cgroups are
// usable).
//
// Security: image_path, kernel, initrd, drives and every file of an
// image's backing chain must resolve (symlinks followed, ".." rejected)
// into the alloc dir or a directory of the client's image_paths; args
// must be in args_allowlist and vfio_devices in vfio_allowlist (both
// empty by default: nothing allowed).
//
// Imports: api, drivers, drivers/executor and drivers/logging; never agent
// or server.
//
// Concurrency: Driver is safe for concurrent use. The version probe runs
// once on a goroutine owned by the driver (Close waits for it); each QMP
// command runs on a goroutine owned by its task's qmpClient, which
// DestroyTask waits for once qemu is gone.
package qemu
