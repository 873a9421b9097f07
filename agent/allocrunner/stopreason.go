package allocrunner

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
)

// Why an allocation is stopping, as its tasks read it from
// $DROVER_ALLOC_DIR/stop_reason (StopReasonFile) once they get their
// kill_signal: training code checks it in its signal handler to write a
// final checkpoint when it will be resumed elsewhere (preempted, drained,
// node_lost) and not when the job was stopped for good.
const (
	// StopPreempted: a higher-priority allocation evicted it.
	StopPreempted = "preempted"
	// StopDrained: its node is draining; it is replaced elsewhere.
	StopDrained = "drained"
	// StopSpotInterrupted: its node is spot capacity its provider takes
	// back (an interruption notice or drover node interrupt): drained with
	// the notice's deadline and replaced elsewhere.
	StopSpotInterrupted = "spot_interrupted"
	// StopNodeLost: the servers lost its node and replaced it (the client
	// learns that when it reconnects), or the client, cut off from the
	// servers for longer than the group's disconnect window, gave it up.
	StopNodeLost = "node_lost"
	// StopStopped: the servers stopped it for any other reason (job stop
	// or update, scale down, a gang's whole restart ...).
	StopStopped = "stopped"
	// StopInterrupted: the client stopped it on its own (a dev agent's
	// shutdown) while the servers still want it to run.
	StopInterrupted = "interrupted"
)

// StopReasonFile is the file, in the shared alloc/ dir, that holds the
// stop reason followed by a newline.
const StopReasonFile = "stop_reason"

// StopReason is why a is stopping: from the servers' desired state of
// it, else StopInterrupted.
func StopReason(a *api.Allocation) string {
	switch {
	case a.DesiredStatus == api.AllocDesiredStatusEvict || a.PreemptedByAllocation != "":
		return StopPreempted
	case a.DesiredStatus != api.AllocDesiredStatusStop:
		return StopInterrupted
	case a.ClientStatus == api.AllocClientStatusLost || a.ClientStatus == api.AllocClientStatusUnknown:
		return StopNodeLost
	case a.DesiredTransition.ShouldMigrate() && strings.Contains(a.DesiredDescription, api.DrainReasonSpot):
		return StopSpotInterrupted
	case a.DesiredTransition.ShouldMigrate():
		return StopDrained
	}
	return StopStopped
}

// WriteStopReason writes reason to alloc/StopReasonFile in the alloc dir.
// The shared alloc/ dir is writable by tasks, so nothing is followed (as
// WriteGangFiles): a link planted at alloc/ is an error, one planted at
// the file is replaced.
func WriteStopReason(allocDir, reason string) error {
	root, err := unix.Open(allocDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("write stop reason: open alloc dir: %w", err)
	}
	defer unix.Close(root)
	shared, err := openDirAt(root, "alloc", false)
	if err != nil {
		return fmt.Errorf("write stop reason: %w", err)
	}
	defer unix.Close(shared)
	if err := replaceAt(shared, StopReasonFile, []byte(reason+"\n")); err != nil {
		return fmt.Errorf("write stop reason: %w", err)
	}
	return nil
}
