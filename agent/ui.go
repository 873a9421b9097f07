package agent

import (
	nethttp "net/http"

	"github.com/drover/drover/ui"
)

// uiHandler returns the embedded web UI (package ui), mounted at /ui/.
func uiHandler() nethttp.Handler { return ui.Handler() }
