package nvidia

import (
	"strconv"
	"strings"
)

// Simulated nodes are laid out as a DGX SuperPOD: SimNodesPerRack DGX
// servers per rack, SimRacksPerBlock racks per block (a scalable unit of
// 32 nodes behind one set of leaf switches).
const (
	SimNodesPerRack  = 4
	SimRacksPerBlock = 8
)

// SimTopology is the network topology of a simulated node, as topology
// level -> domain: the node's number N is the last run of digits in its
// name ("gpu-13" is 13; a name without digits is 0), its rack
// "rack-<N/4>" and its block "block-<N/32>". So dev agents named gpu-0 ...
// gpu-7 fill racks rack-0 and rack-1 of block-0. The agent gives these to
// a -dev-gpus node that has no topology of its own (client topology {} or
// meta "topology.<level>").
func SimTopology(nodeName string) map[string]string {
	n := nodeNumber(nodeName)
	rack := n / SimNodesPerRack
	return map[string]string{
		"rack":  "rack-" + strconv.Itoa(rack),
		"block": "block-" + strconv.Itoa(rack/SimRacksPerBlock),
	}
}

// nodeNumber is the last run of digits in name (0 when none, or too long).
func nodeNumber(name string) int {
	end := strings.LastIndexAny(name, "0123456789")
	if end < 0 {
		return 0
	}
	start := end
	for start > 0 && name[start-1] >= '0' && name[start-1] <= '9' {
		start--
	}
	n, err := strconv.Atoi(name[start : end+1])
	if err != nil {
		return 0
	}
	return n
}
