// Package fingerprint discovers what a client node offers: CPU, memory,
// disk of the data dir, kernel, OS, network address, cgroup version and
// the health of each task driver. The result becomes the node's
// Attributes, NodeResources and Drivers, so job constraints such as
// ${attr.kernel.name} = linux or ${attr.driver.exec} can be evaluated.
//
// The host fingerprint only reads /proc, /sys and /etc files and makes
// syscalls (no external commands): it takes a few milliseconds.
//
// Imports: api and drivers only; never server or other agent packages.
//
// Concurrency: FingerprintDrivers asks the drivers in parallel and waits
// for them. The functions are pure apart from reading the host and
// are safe to call from any goroutine; the caller (agent/client) owns the
// periodic re-fingerprint loop.
package fingerprint
