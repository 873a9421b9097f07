package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// apiClient builds the REST client from -address, -namespace, -region,
// -token and the TLS flags, each else from $DROVER_..., then $NOMAD_...
// (env.go).
func apiClient(cmd *cobra.Command) *api.Client {
	c := api.NewClient(setting(cmd, "address"))
	switch t, err := cliTLS(cmd); {
	case err != nil:
		c.HTTP = &http.Client{Transport: failingTransport{err}}
	case t != nil:
		c.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: t, Proxy: http.ProxyFromEnvironment}}
	}
	c.Namespace = namespaceFlag(cmd)
	c.Region = setting(cmd, "region")
	c.Token = setting(cmd, "token")
	return c
}

// namespaceFlag is -namespace, else $DROVER_NAMESPACE, then
// $NOMAD_NAMESPACE ("" = default).
func namespaceFlag(cmd *cobra.Command) string {
	return setting(cmd, "namespace")
}

// addJSONFlag registers -json on cmd.
func addJSONFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("json", false, "print the answer as JSON")
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns; rows are tab-separated.
func table(w io.Writer, header string, rows []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
}

// kv writes "Key = Value" lines aligned like Nomad's detail views.
func kv(w io.Writer, pairs ...string) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s\t= %s\n", pairs[i], pairs[i+1])
	}
	tw.Flush()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func fmtUnixNano(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}

// fmtAgo is a time with how long ago it was, as Nomad shows them
// ("2026-12-03T11:32:33Z (5s ago)").
func fmtAgo(ns int64, now time.Time) string {
	if ns == 0 {
		return "-"
	}
	t := time.Unix(0, ns)
	rel := "ago"
	d := now.Sub(t)
	if d < 0 {
		d, rel = -d, "from now"
	}
	return fmt.Sprintf("%s (%s %s)", t.UTC().Format(time.RFC3339), roundAgo(d), rel)
}

// roundAgo rounds a duration to what a person reads: 5s, 3m10s, 2h5m, 3d4h.
func roundAgo(d time.Duration) string {
	switch {
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int((d%(24*time.Hour))/time.Hour))
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// cmdErr turns an API error into the CLI's exit code 1 with its message.
func cmdErr(format string, a ...any) error {
	return &exitError{code: ExitError, err: fmt.Errorf(format, a...)}
}

// exactArgs is cobra.ExactArgs reported as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s takes exactly %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// rangeArgs is cobra.RangeArgs reported as a usage error.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErr("%s takes %d to %d arguments, got %d", cmd.CommandPath(), lo, hi, len(args))
		}
		return nil
	}
}

// resolveAlloc finds the allocation with id or a unique id prefix.
func resolveAlloc(ctx context.Context, c *api.Client, id string) (*api.Allocation, error) {
	a, _, err := c.Allocation(ctx, id, nil)
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, api.ErrAllocNotFound) && !errors.Is(err, api.ErrNotFound) {
		return nil, err
	}
	stubs, _, lerr := c.Allocations(ctx, &api.QueryOptions{Prefix: id, Namespace: "*"})
	if lerr != nil {
		return nil, lerr
	}
	switch len(stubs) {
	case 0:
		return nil, fmt.Errorf("no allocation with prefix %q: %w", id, api.ErrAllocNotFound)
	case 1:
		a, _, err := c.Allocation(ctx, stubs[0].ID, nil)
		return a, err
	}
	ids := make([]string, 0, len(stubs))
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	return nil, fmt.Errorf("prefix %q matches %d allocations: %s", id, len(stubs), strings.Join(ids, ", "))
}

// resolveNode finds the node with id or a unique id prefix.
func resolveNode(ctx context.Context, c *api.Client, id string) (*api.Node, error) {
	n, _, err := c.Node(ctx, id, nil)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, api.ErrNodeNotFound) && !errors.Is(err, api.ErrNotFound) {
		return nil, err
	}
	stubs, _, lerr := c.Nodes(ctx, &api.QueryOptions{Prefix: id})
	if lerr != nil {
		return nil, lerr
	}
	switch len(stubs) {
	case 0:
		return nil, fmt.Errorf("no node with prefix %q: %w", id, api.ErrNodeNotFound)
	case 1:
		n, _, err := c.Node(ctx, stubs[0].ID, nil)
		return n, err
	}
	ids := make([]string, 0, len(stubs))
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	return nil, fmt.Errorf("prefix %q matches %d nodes: %s", id, len(stubs), strings.Join(ids, ", "))
}

// resolveEval finds the evaluation with id or a unique id prefix.
func resolveEval(ctx context.Context, c *api.Client, id string) (*api.Evaluation, error) {
	e, _, err := c.Evaluation(ctx, id, nil)
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, api.ErrEvalNotFound) && !errors.Is(err, api.ErrNotFound) {
		return nil, err
	}
	evals, _, lerr := c.Evaluations(ctx, &api.QueryOptions{Prefix: id, Namespace: "*"})
	if lerr != nil {
		return nil, lerr
	}
	switch len(evals) {
	case 0:
		return nil, fmt.Errorf("no evaluation with prefix %q: %w", id, api.ErrEvalNotFound)
	case 1:
		return evals[0], nil
	}
	return nil, fmt.Errorf("prefix %q matches %d evaluations", id, len(evals))
}

// failureLines explains why placements of each group failed; with the job
// (nil when unknown) a gang's groups also say how gangs are placed.
func failureLines(failed map[string]*api.AllocMetric, job *api.Job) []string {
	groups := make([]string, 0, len(failed))
	for g := range failed {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []string
	for _, g := range groups {
		m := failed[g]
		out = append(out, fmt.Sprintf("Task Group %q (failed to place %d allocation(s)):", g, m.CoalescedFailures+1))
		lines := metricLines(m)
		if l := gangFailureLine(job, g); l != "" {
			at := 0
			if m.GangFailure != "" {
				at = 1 // after the scheduler's reason
			}
			lines = slices.Insert(lines, at, l)
		}
		out = append(out, lines...)
	}
	return out
}

func metricLines(m *api.AllocMetric) []string {
	var out []string
	if m.GangFailure != "" {
		out = append(out, "  * "+m.GangFailure)
	}
	if m.NodesEvaluated == 0 && m.NodesInPool == 0 {
		out = append(out, "  * No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("  * No nodes are available in datacenter %q", dc))
		}
	}
	// ClassFiltered and ClassExhausted (computed-class hashes, "v1:...")
	// stay in the API and -json: they mean nothing to a reader.
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		out = append(out, fmt.Sprintf("  * Constraint %q: %d nodes excluded by filter", k, m.ConstraintFiltered[k]))
	}
	if m.NodesExhausted > 0 {
		for _, k := range sortedKeys(m.DimensionExhausted) {
			out = append(out, fmt.Sprintf("  * Dimension %q exhausted on %d nodes", k, m.DimensionExhausted[k]))
		}
	}
	has := map[string]bool{}
	for _, r := range m.Reasons {
		has[r.Kind] = true
	}
	if !has[api.PendingQuota] {
		for _, q := range m.QuotaExhausted {
			out = append(out, fmt.Sprintf("  * Quota limit hit %q", q))
		}
	}
	if !has[api.PendingDevices] {
		for _, d := range m.DeviceShortfalls {
			out = append(out, "  * Devices: "+d)
		}
	}
	return append(out, pendingLines(m)...)
}

// pendingLines renders the scheduler's structured why-pending reasons and
// counterfactuals (api/pending.go) below a group's counters, e.g.
//
//	Why pending:
//	  - needs 4 nvidia/gpu on one node; largest free set is 2 on node g1
//	Would run:
//	  - on node g1 if job fill (priority 40) were preempted; not done: ...
//	  - or on node g1 when batch job fill (priority 40) ends
func pendingLines(m *api.AllocMetric) []string {
	var out []string
	if len(m.Reasons) > 0 {
		out = append(out, "  Why pending:")
		for _, r := range m.Reasons {
			out = append(out, "    - "+r.Message)
		}
	}
	if len(m.Counterfactuals) > 0 {
		out = append(out, "  Would run:")
		for i, c := range m.Counterfactuals {
			msg := strings.TrimPrefix(c.Message, "would run ")
			if i > 0 {
				msg = "or " + msg
			}
			out = append(out, "    - "+msg)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
