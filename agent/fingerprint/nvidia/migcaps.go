package nvidia

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// migCaps gives the minors of the capability device nodes of GPU
// instance gi and of its compute instance ci on the GPU with device minor
// gpu; 0 for what it does not know.
type migCaps func(gpu, gi, ci int) (giCap, ciCap int)

// driverMIGCaps numbers MIG capabilities the way the NVIDIA driver lays
// out its mig-minors file: config 1, monitor 2, then for each GPU minor
// (32) and GPU instance (15) the instance's access followed by those of
// its 8 compute instances. The simulators use it; hosts read the file.
func driverMIGCaps(gpu, gi, ci int) (int, int) {
	if gpu < 0 || gpu >= 32 || gi < 0 || gi >= 15 || ci < 0 || ci >= 8 {
		return 0, 0
	}
	g := 3 + (gpu*15+gi)*9
	return g, g + 1 + ci
}

// parseMIGMinors reads a mig-minors file ("gpu0/gi0/access 3",
// "gpu0/gi0/ci0/access 4" lines) into a lookup. Lines it does not
// understand are skipped.
func parseMIGMinors(r io.Reader) (migCaps, error) {
	minors := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, num, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n <= 0 {
			continue
		}
		minors[name] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mig minors: %w", err)
	}
	return func(gpu, gi, ci int) (int, int) {
		g := fmt.Sprintf("gpu%d/gi%d", gpu, gi)
		return minors[g+"/access"], minors[fmt.Sprintf("%s/ci%d/access", g, ci)]
	}, nil
}
