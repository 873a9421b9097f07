package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// answer is what a read command (list, status, info) prints: v as
// indented JSON with -json, else human's text (human's error is the
// command's).
type answer struct {
	v     any
	human func(w io.Writer) error
}

// readCmd makes cmd a read command: it gets -json, and its RunE prints
// what query answers (query's error is the command's). query may leave
// reads only the human form needs to human, which runs without -json.
func readCmd(cmd *cobra.Command, query func(cmd *cobra.Command, c *api.Client, args []string) (answer, error)) *cobra.Command {
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		a, err := query(cmd, apiClient(cmd), args)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, a.v)
		}
		return a.human(out)
	}
	return cmd
}

// listAnswer is the answer of a list command: items, shown as listTable
// shows them.
func listAnswer[T any](items []T, none, header string, row func(T) string) answer {
	return answer{items, func(w io.Writer) error {
		listTable(w, items, none, header, row)
		return nil
	}}
}

// listTable writes items as a table with one row(item) each, or the
// line none when there are none ("" writes the header alone).
func listTable[T any](w io.Writer, items []T, none, header string, row func(T) string) {
	if len(items) == 0 && none != "" {
		fmt.Fprintln(w, none)
		return
	}
	rows := make([]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	table(w, header, rows)
}

// get reads the API path into a T, with query options q (nil for none);
// an error is the command's, under what ("acl policy list: ...").
func get[T any](cmd *cobra.Command, c *api.Client, what, path string, q *api.QueryOptions) (T, error) {
	var v T
	if _, err := c.Query(cmd.Context(), path, &v, q); err != nil {
		return v, cmdErr("%s: %w", what, err)
	}
	return v, nil
}
