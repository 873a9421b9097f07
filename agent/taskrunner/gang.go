package taskrunner

import (
	"net"
	"path/filepath"
	"strconv"

	"github.com/drover/drover/api"
)

// Where the alloc runner writes a gang's hosts files, relative to the
// shared alloc/ dir (so alloc/gang/hosts under the alloc dir).
const (
	// GangDir is the directory of the gang files inside alloc/.
	GangDir = "gang"
	// GangHostsFile is the /etc/hosts-format list of the members.
	GangHostsFile = "hosts"
	// GangHostfile is the MPI hostfile ("<address> slots=<n>" per node).
	GangHostfile = "hostfile"
)

// gangEnv adds a gang member's variables to v: DROVER_GANG_ID, _SIZE,
// _RANK, _LEADER_ADDR (host:port), _HOSTS and _HOSTFILE (paths of the
// files in the alloc dir as the task sees it), and the torch.distributed
// names MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK. The task's own env
// is applied after, so a job that sets any of these keeps its value.
func gangEnv(v map[string]string, g *api.AllocGang, dirs Dirs) {
	if g == nil {
		return
	}
	v["DROVER_GANG_ID"] = g.ID
	v["DROVER_GANG_SIZE"] = strconv.Itoa(g.Size)
	v["DROVER_GANG_RANK"] = strconv.Itoa(g.Rank)
	v["WORLD_SIZE"] = strconv.Itoa(g.Size)
	v["RANK"] = strconv.Itoa(g.Rank)
	gangDir := filepath.Join(dirs.AllocDir, GangDir)
	v["DROVER_GANG_HOSTS"] = filepath.Join(gangDir, GangHostsFile)
	v["DROVER_GANG_HOSTFILE"] = filepath.Join(gangDir, GangHostfile)
	if g.LeaderAddr == "" {
		return
	}
	v["DROVER_GANG_LEADER_ADDR"] = g.LeaderAddr
	if host, port, err := net.SplitHostPort(g.LeaderAddr); err == nil {
		v["MASTER_ADDR"] = host
		v["MASTER_PORT"] = port
	}
}
