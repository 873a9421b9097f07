// Command mkimages writes the test images into a directory:
//
//	go run ./drivers/drivertest/testimage/mkimages -out build/images [-only busybox,vm]
//
// Each image family is a testimage.Builder; a new family registers itself
// in the testimage package and appears here without changes.
//
// Imports: testimage only. Concurrency: builders run one after another.
package main
