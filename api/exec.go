package api

import (
	"encoding/json"
	"net/url"
	"strconv"
)

// ExecStreamFrame is one JSON text message of the alloc exec websocket
// (GET /v1/client/allocation/{alloc}/exec). The client sends Stdin and
// TTYSize frames; the server sends Stdout, Stderr and, last, Exited with
// Result. Data is base64 on the wire ([]byte marshals that way).
type ExecStreamFrame struct {
	Stdin   *ExecStreamData   `json:"stdin,omitempty"`
	Stdout  *ExecStreamData   `json:"stdout,omitempty"`
	Stderr  *ExecStreamData   `json:"stderr,omitempty"`
	TTYSize *TerminalSize     `json:"tty_size,omitempty"`
	Exited  bool              `json:"exited,omitempty"`
	Result  *ExecStreamResult `json:"result,omitempty"`
}

// ExecStreamData carries a chunk of a stream, or Close for its end.
type ExecStreamData struct {
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

// ExecStreamResult is the remote command's outcome.
type ExecStreamResult struct {
	ExitCode int `json:"exit_code"`
}

// TerminalSize of an exec TTY, in character cells.
type TerminalSize struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

// ExecPath returns the path and query of the alloc exec websocket for
// allocID, task, command and tty. The transport (a websocket client) lives
// outside api, which imports only the standard library.
func ExecPath(allocID, task string, command []string, tty bool) string {
	cmd, _ := json.Marshal(command)
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	q.Set("command", string(cmd))
	q.Set("tty", strconv.FormatBool(tty))
	return "/v1/client/allocation/" + url.PathEscape(allocID) + "/exec?" + q.Encode()
}
