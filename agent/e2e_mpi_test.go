package agent_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// mpiProgram is the MPI program every rank runs (mpi4py): an allreduce
// of rank+1, printed with the alloc the rank runs in.
const mpiProgram = `import os
from mpi4py import MPI
c = MPI.COMM_WORLD
total = c.allreduce(c.Get_rank() + 1, op=MPI.SUM)
print("mpi rank %d of %d alloc %s allreduce %d" % (c.Get_rank(), c.Get_size(), os.environ["DROVER_ALLOC_ID"], total), flush=True)
`

// mpiScript is a gang member's task. Rank 0 runs mpirun over the gang's
// hostfile with `drover alloc mpi-rsh` as its remote shell agent, so
// mpirun starts its daemon (orted), and through it the MPI rank, inside
// each member's task by alloc exec; then it releases the other members
// the same way. The others wait for that release, so exec finds their
// task running. The mpirun options keep Open MPI on loopback, where the
// test's nodes are (a real cluster leaves them out);
// --allow-run-as-root is for tasks that run as root (raw_exec). (No "${"
// in it: that is HCL's.)
const mpiScript = `if [ "$DROVER_GANG_RANK" != 0 ]; then
  echo "rank $DROVER_GANG_RANK waits for mpirun"
  while [ ! -e "$DROVER_ALLOC_DIR/tmp/mpi-done" ]; do sleep 0.2; done
  exit 0
fi
echo '--- hostfile'; cat "$DROVER_GANG_HOSTFILE"; echo '--- end'
export OMPI_MCA_plm_rsh_agent="$DROVER_BIN alloc mpi-rsh"
mpirun --allow-run-as-root --hostfile "$DROVER_GANG_HOSTFILE" -np "$DROVER_GANG_SIZE" \
  --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  /usr/bin/python3 -c "$MPI_PROGRAM" || exit 1
while read -r host _; do
  "$DROVER_BIN" alloc mpi-rsh "$host" 'touch "$DROVER_ALLOC_DIR/tmp/mpi-done"' || exit 1
done < "$DROVER_GANG_HOSTFILE"
echo "mpirun done"`

// mpiJobHCL is a batch job of a 2-member gang, one member per node,
// running mpiScript as exec tasks (isolated, user nobody) that find the
// drover binary at bin, in the read-only host volume "drover", and the
// API at addr.
func mpiJobHCL(bin, addr string) string {
	return fmt.Sprintf(`job "mpi" {
  type = "batch"
  group "ranks" {
    count = 2
    constraint {
      distinct_hosts = true
    }
    gang {}
    restart {
      attempts = 0
      mode     = "fail"
    }
    volume "drover" {
      type      = "host"
      source    = "drover"
      read_only = true
    }
    task "mpi" {
      driver = "exec"
      volume_mount {
        volume      = "drover"
        destination = "/opt/drover"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      env {
        DROVER_BIN  = %q
        DROVER_ADDR = %q
        MPI_PROGRAM = %q
      }
      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
`, mpiScript, bin, addr, mpiProgram)
}

var mpiRankLine = regexp.MustCompile(`(?m)^mpi rank (\d+) of (\d+) alloc (\S+) allreduce (\d+)$`)

// TestE2EMPIGangRshAgent runs an Open MPI program as a 2-member gang on
// two client nodes with no ssh daemon anywhere: rank 0's mpirun starts
// the ranks through `drover alloc mpi-rsh` (alloc exec into each member)
// and every MPI rank prints the allreduce of rank+1 (3) and the alloc it
// ran in: MPI rank i in gang member i, by the hostfile's order.
func TestE2EMPIGangRshAgent(t *testing.T) {
	needPackage(t, "openmpi-bin", "mpirun", "--version")
	needPackage(t, "python3-mpi4py", "/usr/bin/python3", "-c", "from mpi4py import MPI")
	bin := droverBin(t)
	d := startGangCluster(t, 2, "-host-volume", "drover="+filepath.Dir(bin)+":ro")
	if out, err := d.drover("job", "run", "-detach", writeJob(t, "mpi.hcl", mpiJobHCL("/opt/drover/"+filepath.Base(bin), d.base))); err != nil {
		t.Fatalf("drover job run mpi: %v\n%s", err, out)
	}
	members := gangMembers(d, "mpi", "mpi", 2, nil)
	if members[0].NodeID == members[1].NodeID {
		t.Errorf("both members on node %s, want one per node (distinct_hosts)", members[0].NodeName)
	}
	var stubs []*api.AllocListStub
	d.waitBlocking("/v1/job/mpi/allocations", "both members finished (or one failed)", func(b []byte) (bool, string) {
		stubs = nil
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		fin := 0
		for _, s := range stubs {
			got = append(got, fmt.Sprintf("%s %s/%s", s.ID[:8], s.DesiredStatus, s.ClientStatus))
			switch s.ClientStatus {
			case api.AllocClientStatusComplete:
				fin++
			case api.AllocClientStatusFailed:
				return true, ""
			}
		}
		return fin == 2, strings.Join(got, ", ")
	})
	out := d.logs(members[0].ID, "mpi")
	var bad []string
	for _, s := range stubs {
		if s.ClientStatus != api.AllocClientStatusComplete {
			bad = append(bad, fmt.Sprintf("%s (%s) %s", s.ID[:8], s.Name, s.ClientStatus))
		}
	}
	if len(bad) > 0 {
		t.Errorf("members %v, want both complete; rank 0's stdout:\n%s\nstderr:\n%s", bad, out, taskLog(d, members[0].ID, "mpi", "stderr"))
	}
	// mpirun gathers every rank's output into rank 0's task.
	seen := map[string]bool{}
	for _, m := range mpiRankLine.FindAllStringSubmatch(out, -1) {
		seen[m[1]] = true
		rank, _ := strconv.Atoi(m[1])
		want := members[rank]
		if want == nil || m[2] != "2" || m[3] != want.ID || m[4] != "3" {
			t.Errorf("%q: want MPI rank %s of 2 in gang member %d's alloc, allreduce 3 (1+2)", m[0], m[1], rank)
		}
	}
	if !seen["0"] || !seen["1"] || len(seen) != 2 {
		t.Errorf("MPI ranks that printed the allreduce: %v, want 0 and 1; rank 0's output:\n%s", keys(seen), out)
	}
	if !strings.Contains(out, "mpirun done") {
		t.Errorf("rank 0 did not finish its script:\n%s", out)
	}
}
