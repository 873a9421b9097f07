package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// GPU shares as the status commands print them: an ask (api.DeviceShare,
// from the job) and a grant (api.AllocatedShare, on the alloc).

// milliString renders thousandths of a device instance: "0.250".
func milliString(m int) string {
	return strconv.FormatFloat(float64(m)/api.MilliPerDevice, 'f', 3, 64)
}

// grantString renders what an alloc holds of each of its instances:
// "0.250 mps, limit 0.5, 20480 MiB" (see grantExtras).
func grantString(s *api.AllocatedShare) string {
	return strings.Join(append([]string{milliString(s.Milli) + " " + orDash(s.Mode)}, grantExtras(s)...), ", ")
}

// grantExtras are a grant's burst limit (only above the share) and the
// instance memory it may use (when known): "limit 0.5", "20480 MiB".
func grantExtras(s *api.AllocatedShare) []string {
	var out []string
	if s.LimitMilli > s.Milli {
		out = append(out, "limit "+api.FormatGPUs(float64(s.LimitMilli)/api.MilliPerDevice))
	}
	if s.MemoryMB > 0 {
		out = append(out, strconv.FormatInt(s.MemoryMB, 10)+" MiB")
	}
	return out
}

// askString renders a share asked of each instance: "0.25 mps, limit
// 0.5" or "10240 MiB time-slicing" ("-" for whole instances).
func askString(s *api.DeviceShare) string {
	if s == nil {
		return "-"
	}
	amount := api.FormatGPUs(s.Fraction)
	if s.MemoryMB > 0 {
		amount = strconv.FormatInt(s.MemoryMB, 10) + " MiB"
	}
	out := amount + " " + s.ShareMode()
	if s.Limit > 0 {
		out += ", limit " + api.FormatGPUs(s.Limit)
	}
	return out
}

// deviceGrantString renders a task's device grant for alloc status:
// "GPU-1, GPU-2" for whole instances, "GPU-1 0.250 mps, limit 0.5, 20480
// MiB" for a share ("... mps each, ..." for a share of several).
func deviceGrantString(d *api.AllocatedDeviceResource) string {
	ids := strings.Join(d.DeviceIDs, ", ")
	if d.Share == nil {
		return ids
	}
	g := grantString(d.Share)
	if len(d.DeviceIDs) > 1 {
		mode, rest, _ := strings.Cut(g, ",")
		g = mode + " each"
		if rest != "" {
			g += "," + rest
		}
	}
	return ids + " " + g
}

// printDeviceAsks lists the job's device asks (job status): per group
// and task, the device, its count and the share asked of each instance.
func printDeviceAsks(w io.Writer, job *api.Job) {
	var rows []string
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			if t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%s", g.Name, t.Name, d.Name, d.Count, askString(d.Share)))
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDevices")
	table(w, "Task Group\tTask\tDevice\tCount\tShare", rows)
}
