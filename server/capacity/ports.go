package capacity

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// MaxPort is the highest port number.
const MaxPort = 65535

// maxSpecLen bounds the port spec the parser reads.
const maxSpecLen = 64 << 10

// ParsePortSpec parses a port spec such as "22, 80,8000-8010" (the format
// of ReservedHostPorts). It returns every port it could read (each part
// that is not a number or a range lo-hi with 0 <= lo <= hi <= 65535 is
// skipped) and an error wrapping api.ErrBadRequest naming the first bad
// part. Duplicates are kept once; the output is at most 65536 ports.
func ParsePortSpec(spec string) ([]int, error) {
	var firstErr error
	bad := func(part, why string) {
		if firstErr == nil {
			firstErr = fmt.Errorf("%w: port spec part %q: %s", api.ErrBadRequest, part, why)
		}
	}
	if len(spec) > maxSpecLen {
		return nil, fmt.Errorf("%w: port spec of %d bytes (at most %d)", api.ErrBadRequest, len(spec), maxSpecLen)
	}
	var out []int
	var seen map[int]bool
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 || a > MaxPort {
			bad(part, "not a port number")
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a || b > MaxPort {
				bad(part, "not a range lo-hi of ports")
				continue
			}
		}
		if seen == nil {
			seen = map[int]bool{}
		}
		for p := a; p <= b; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, firstErr
}
