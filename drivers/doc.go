// Package drivers defines the task driver contract: the Driver interface
// that runs a task as a process, container or VM, the optional abilities
// found by type assertion (Statser, Signaler, Execer), and the types that
// cross it (TaskConfig, TaskHandle, ExitResult, Fingerprint).
//
// One sub-package per driver (exec, rawexec, containerd, qemu, mock) and
// drivertest, the conformance suite every driver passes against its real
// runtime.
//
// Tasks is every driver's table of its running tasks (lookup, a second
// start refused, the handle written at start and read back at recovery),
// and WaitExit every driver's WaitTask channel.
//
// OwnSecrets is shared by the drivers that run a task as some user: it
// hands the task's secrets/ to that user. NvidiaControlDevices is the one
// list of NVIDIA control device nodes: the client puts them, with the
// allocated GPUs' own nodes, in TaskConfig.Devices, and drivers expose
// that list as given.
//
// Imports: no drover package but api (a test enforces this).
//
// Concurrency: a Driver is used by many task runners at once and must be
// safe for concurrent use. A task's logs are written by the driver (or its
// supervisor) to rotated files so they survive an agent restart.
package drivers
