package jobspec_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// hostileDepth is how deep BenchmarkHostileNesting nests its list.
const hostileDepth = 100_000

// hclsyntaxChildEnv makes the test binary a child that parses its stdin
// with hclsyntax alone and exits (see TestMain).
const hclsyntaxChildEnv = "DROVER_BENCH_HCLSYNTAX_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(hclsyntaxChildEnv) == "1" {
		src, err := io.ReadAll(os.Stdin)
		if err != nil {
			panic(err)
		}
		hclsyntax.ParseConfig(src, "deep.hcl", hcl.InitialPos)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkHostileNesting measures what the limits scan (limits.go) spares
// the agent on a hostile job source, a list nested hostileDepth deep (200
// KB, under MaxSourceBytes), against what hashicorp/hcl's own code costs
// on it. `make bench` prints:
//
//	prescan-us, prescan-KB       jobspec.Parse of it: refused by the scan (time, bytes allocated)
//	lexer-ms, lexer-KB           hclsyntax.LexConfig of it: the least any check on the library's own tokens costs
//	hclsyntax-ms                 hclsyntax.ParseConfig alone, in a child process: until it ends or dies
//	hclsyntax-peak-RSS-MB        that child's peak resident memory
//	hclsyntax-crashed            the share of the children that died (their stack overflowed)
func BenchmarkHostileNesting(b *testing.B) {
	src := []byte("x = " + strings.Repeat("[", hostileDepth) + strings.Repeat("]", hostileDepth) + "\n")
	if len(src) > jobspec.MaxSourceBytes {
		b.Fatalf("source is %d bytes, over MaxSourceBytes: the scan would not run", len(src))
	}
	var prescan, lexer, parse time.Duration
	var prescanBytes, lexerBytes uint64
	var peakRSS, crashed float64
	opts := &jobspec.Options{Env: []string{}}
	for i := 0; i < b.N; i++ {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		t0 := time.Now()
		_, err := jobspec.Parse("deep.hcl", src, opts)
		prescan += time.Since(t0)
		runtime.ReadMemStats(&ms1)
		prescanBytes += ms1.TotalAlloc - ms0.TotalAlloc
		if !errors.Is(err, api.ErrInvalidJob) || !strings.Contains(err.Error(), "Nesting too deep") {
			b.Fatalf("Parse = %v, want Nesting too deep", err)
		}

		runtime.ReadMemStats(&ms0)
		t0 = time.Now()
		toks, _ := hclsyntax.LexConfig(src, "deep.hcl", hcl.InitialPos)
		lexer += time.Since(t0)
		runtime.ReadMemStats(&ms1)
		lexerBytes += ms1.TotalAlloc - ms0.TotalAlloc
		if len(toks) < 2*hostileDepth {
			b.Fatalf("LexConfig made %d tokens, want at least %d", len(toks), 2*hostileDepth)
		}

		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), hclsyntaxChildEnv+"=1")
		cmd.Stdin = bytes.NewReader(src)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 = time.Now()
		err = cmd.Run()
		parse += time.Since(t0)
		if cmd.ProcessState == nil {
			b.Fatalf("hclsyntax child: %v", err)
		}
		if err != nil {
			if !strings.Contains(stderr.String(), "stack overflow") {
				b.Fatalf("hclsyntax child: %v, not a stack overflow:\n%.2000s", err, stderr.String())
			}
			crashed++
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakRSS += float64(ru.Maxrss) / 1024 // KB on Linux
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(prescan.Microseconds())/n, "prescan-us")
	b.ReportMetric(float64(prescanBytes)/1024/n, "prescan-KB")
	b.ReportMetric(float64(lexer.Microseconds())/1e3/n, "lexer-ms")
	b.ReportMetric(float64(lexerBytes)/1024/n, "lexer-KB")
	b.ReportMetric(float64(parse.Microseconds())/1e3/n, "hclsyntax-ms")
	b.ReportMetric(peakRSS/n, "hclsyntax-peak-RSS-MB")
	b.ReportMetric(crashed/n, "hclsyntax-crashed")
}
