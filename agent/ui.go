package agent

import (
	nethttp "net/http"

	"github.com/drover/drover/ui"
)

// uiHandler returns the embedded web UI served under /ui/.
func uiHandler() nethttp.Handler { return ui.Handler() }
