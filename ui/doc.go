// Package ui is drover's web UI: plain HTML, CSS and ES modules under
// assets/ (no Node build step) embedded with go:embed, so `go build` alone
// yields a complete binary. Handler serves it under /ui/: files below
// /ui/assets/ as they are (with content hashes as ETags), index.html for
// every other /ui/... path so deep links such as /ui/jobs/web survive a
// reload; the client-side router (assets/js/router.js) renders the page.
//
// The JavaScript talks to the agent only through its public REST API
// (/v1/..., blocking queries and the event stream); assets/js/api.js holds
// the fetch helpers. One module per page lives in assets/js/pages/.
//
// Imports: the standard library and api only (a layout test enforces it);
// package agent mounts Handler.
//
// Concurrency: Handler loads the assets once, on first use (sync.OnceValue;
// processes that never serve the UI, such as executors, pay nothing); the
// handler is immutable after that and safe for concurrent use.
package ui
