// Package nvidia fingerprints NVIDIA GPUs: each GPU (or MIG instance) with
// its UUID, model, memory, compute capability, driver and CUDA versions,
// PCI bus ID, NUMA node and the interconnect to every peer (NVLink count,
// or the PCIe common ancestor), as api.NodeDeviceResource groups; and it
// watches their health (XID critical errors, uncorrected ECC errors).
//
// NVML is reached through the small Library interface. Three
// implementations exist: the host's NVML through github.com/NVIDIA/go-nvml
// (cgo builds only; go-nvml does not compile without cgo), go-nvml's mock
// DGX servers with a realistic topology and node-derived UUIDs (cgo
// builds; `drover agent -dev -dev-gpus dgxh100`), and an equivalent
// pure-Go simulator used when drover is built with CGO_ENABLED=0 (the
// default static build). A test keeps the two simulators identical.
//
// Imports: api and the standard library (plus go-nvml in cgo builds);
// never server, drivers or other agent packages.
//
// Concurrency: a Fingerprinter's Devices may be called from any
// goroutine. Watch runs the health loop in the caller's goroutine until
// its context ends; the caller owns that goroutine and calls Close after
// Watch returned.
package nvidia
