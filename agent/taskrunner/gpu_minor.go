package taskrunner

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// gpuMinor reads the minor number of the GPU at d's PCI address from the
// NVIDIA driver (<root>/proc/driver/nvidia/gpus/<bus>/information, line
// "Device Minor: N"): /dev/nvidia<N> is that GPU. A MIG instance carries
// its parent GPU's address. False when the driver does not say.
func gpuMinor(root string, d *api.NodeDevice) (int, bool) {
	if d.Locality == nil || d.Locality.PciBusID == "" {
		return 0, false
	}
	bus := strings.ToLower(d.Locality.PciBusID)
	if dom, rest, ok := strings.Cut(bus, ":"); ok && len(dom) == 8 { // NVML: 8-digit domain
		bus = dom[4:] + ":" + rest
	}
	f, err := os.Open(filepath.Join(root, "proc/driver/nvidia/gpus", bus, "information"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Device Minor:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}
