// Package testimage builds the test images the driver tests run: a tiny
// OCI image archive made from the host's /bin/busybox (for containerd),
// and whatever other builders register themselves (the QEMU engineer adds
// a kernel + initramfs builder). Nothing is downloaded: layers, image
// config, manifest and index are written in Go with the OCI image-spec
// types.
//
// Builders are listed in a registry (Register/Builders) that the mkimages
// command walks: `go run ./drivers/drivertest/testimage/mkimages -out
// build/images [-only busybox,vm]`. Tests call BusyboxArchive(t), which
// uses $DROVER_TEST_IMAGES/busybox-oci.tar when present and otherwise builds
// the archive once per test process.
//
// Imports: the standard library, image-spec and go-digest only (no drover
// package).
//
// Concurrency: Build functions are safe to call concurrently for
// different output directories; BusyboxArchive builds at most once per
// process.
package testimage
