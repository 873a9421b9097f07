package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() { rootCmd.AddCommand(newUsageCmd()) }

const usageLong = `Show the usage ledger: GPU-seconds per GPU model, CPU-core-seconds and
memory GiB-seconds in hourly buckets, grouped by queue, namespace or job
("namespace/job"). Allocs still running are counted up to now. A share of
a GPU counts its fraction: a quarter of a GPU for an hour is 0.25 GPU-hours
(900 GPU-seconds).

-from and -to take Unix seconds, RFC3339 or a duration before now ("2h");
by default the last 24 hours. The table shows hours; -csv prints seconds
with the header

  key,bucket,start,gpu_seconds,cpu_core_seconds,memory_gib_seconds,cost[,gpu_seconds:MODEL...]

(bucket: Unix seconds; start: RFC3339 UTC; one gpu_seconds:MODEL column
per GPU model, e.g. gpu_seconds:nvidia/gpu/H100). Cost is GPU hours times
the servers' usage prices (server { usage { prices = {...} } }).

-region all shows every region of the federation, a Region column first;
a region that does not answer in time is left out, with a line
"partial: region NAME did not answer".`

func newUsageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "usage [flags]", Short: "Show GPU, CPU and memory usage per queue, namespace or job",
		Long: usageLong, Args: exactArgs(0)}
	by := cmd.Flags().String("by", api.UsageByQueue, "group by queue, namespace or job")
	from := cmd.Flags().String("from", "", "start: Unix seconds, RFC3339 or a duration ago (default 24h ago)")
	to := cmd.Flags().String("to", "", "end: Unix seconds, RFC3339 or a duration ago (default now)")
	csvOut := cmd.Flags().Bool("csv", false, "print CSV (seconds; see the header above)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch *by {
		case api.UsageByQueue, api.UsageByNamespace, api.UsageByJob:
		default:
			return usageErr("-by %q: want %s, %s or %s", *by, api.UsageByQueue, api.UsageByNamespace, api.UsageByJob)
		}
		now := time.Now()
		f, err := usageBound(*from, now)
		if err != nil {
			return usageErr("-from: %v", err)
		}
		t, err := usageBound(*to, now)
		if err != nil {
			return usageErr("-to: %v", err)
		}
		c := apiClient(cmd)
		all := c.Region == api.RegionAll
		if all && *csvOut {
			return usageErr("-csv: not with -region all (use -json)")
		}
		resp, err := c.Usage(cmd.Context(), *by, f, t)
		if err != nil {
			return cmdErr("usage: %w", err)
		}
		out := cmd.OutOrStdout()
		switch {
		case *jsonOut:
			return printJSON(out, resp)
		case *csvOut:
			return api.WriteUsageCSV(out, resp)
		}
		defer printPartial(out, resp.Missing)
		if len(resp.Rows) == 0 {
			fmt.Fprintf(out, "No usage from %s to %s\n", fmtUnix(resp.From), fmtUnix(resp.To))
			return nil
		}
		rows := make([]string, 0, len(resp.Rows))
		for _, r := range resp.Rows {
			cols := []string{fmtUnix(r.Bucket), r.Key, hours(r.GPUSecondsTotal()),
				gpuModels(r.GPUSeconds), hours(r.CPUCoreSeconds), hours(r.MemoryGiBSeconds), strconv.FormatFloat(r.Cost, 'f', 2, 64)}
			if all {
				cols = append([]string{r.Region}, cols...)
			}
			rows = append(rows, strings.Join(cols, "\t"))
		}
		header := "Hour (UTC)\t" + strings.ToUpper((*by)[:1]) + (*by)[1:] + "\tGPU Hours\tBy Model\tCPU Core Hours\tMemory GiB Hours\tCost"
		if all {
			header = "Region\t" + header
		}
		table(out, header, rows)
		return nil
	}
	return cmd
}

// usageBound passes Unix seconds and RFC3339 through and turns a duration
// into the Unix time that long before now ("" stays "": the server's
// default).
func usageBound(v string, now time.Time) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v, nil
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return v, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%q: want Unix seconds, RFC3339 or a duration such as 2h", v)
	}
	return strconv.FormatInt(now.Add(-d).Unix(), 10), nil
}

func fmtUnix(s int64) string { return time.Unix(s, 0).UTC().Format("2006-01-02 15:04") }

func hours(secs float64) string { return strconv.FormatFloat(secs/3600, 'f', 3, 64) }

// gpuModels lists GPU hours per model ("nvidia/gpu/H100=1.500"), by model.
func gpuModels(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+hours(m[k]))
	}
	return strings.Join(parts, ",")
}

// printPartial names the regions a global view (-region all) lacks.
func printPartial(w io.Writer, missing []string) {
	for _, r := range missing {
		fmt.Fprintf(w, "partial: region %s did not answer\n", r)
	}
}
