// Package gpusharetest is a stand-in for NVIDIA's nvidia-cuda-mps-control,
// for tests of MPS sharing on machines without a GPU: a shell script put
// first on PATH that records every call (arguments, stdin, the MPS env)
// and, with -d, keeps a `sleep` as the "daemon" (its pid in
// CUDA_MPS_PIPE_DIRECTORY/daemon.pid); "quit" on stdin kills it and
// get_default_active_thread_percentage answers only while it lives, as
// the real program does.
//
// Imports: the standard library only. Used by tests only.
//
// Concurrency: a StandIn's methods are safe from the test goroutine; the
// script's runs append whole lines to its record.
package gpusharetest
