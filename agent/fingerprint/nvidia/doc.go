// Package nvidia fingerprints NVIDIA GPUs: each GPU (or MIG instance) with
// its UUID, model, memory, compute capability, driver and CUDA versions,
// PCI bus ID, NUMA node and the interconnect to every peer (NVLink count,
// or the PCIe common ancestor), as api.NodeDeviceResource groups; and it
// watches their health (XID critical errors, uncorrected ECC errors).
// Each instance also carries its device minor (NVML's GetMinorNumber) and
// its device nodes (api.NodeDevice.DevicePaths: /dev/nvidia<minor>, and a
// MIG instance's capability nodes, numbered by the driver's
// /proc/driver/nvidia-caps/mig-minors): the only place the client learns
// which nodes to give a task.
//
// NVML is reached through the small Library interface. Three
// implementations exist:
//   - the host's NVML through github.com/NVIDIA/go-nvml (Open);
//   - go-nvml's mock DGX servers, completed with a realistic topology,
//     ECC counters, events, MIG handles and node-derived UUIDs (Simulate,
//     `drover agent -dev -dev-gpus dgxh100`);
//   - an equivalent pure-Go simulator (NewPureSim).
//
// SimTopology gives simulated nodes a SuperPOD-like network topology
// (rack and block from the number in the node name) for gang topology
// placement in dev clusters.
//
// go-nvml needs cgo, and binaries linking it must bind symbols lazily
// (-ldflags=-extldflags=-Wl,-z,lazy: NVML's symbols resolve only once
// libnvidia-ml.so.1 is loaded). So the go-nvml files build only with the
// "nvml" tag and cgo (`make build-nvml`; `make test` runs this package's
// tests that way). Default builds (the static CGO_ENABLED=0 binary, or
// any build without the tag) have no host NVML (Open returns ErrNoNVML)
// and simulate with the pure-Go twin; TestPureSimMatchesGoNVMLMock keeps
// both simulators identical.
//
// Imports: api and the standard library (plus go-nvml with the nvml tag);
// never server, drivers or other agent packages.
//
// Concurrency: a Fingerprinter's Devices may be called from any
// goroutine. Watch runs the health loop in the caller's goroutine until
// its context ends; the caller owns that goroutine and calls Close after
// Watch returned.
package nvidia
