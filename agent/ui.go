package agent

import nethttp "net/http"

// uiHandler returns the embedded web UI, or nil for the placeholder page.
func uiHandler() nethttp.Handler { return nil }
