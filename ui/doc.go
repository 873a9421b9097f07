// Package ui is drover's web UI: plain HTML, CSS and ES modules under
// assets/ (no Node build step) embedded with go:embed, so `go build` alone
// yields a complete binary. Handler serves it under /ui/: files below
// /ui/assets/ as they are (with content hashes as ETags), index.html for
// every other /ui/... path so deep links such as /ui/jobs/web survive a
// reload; the client-side router (assets/js/router.js) renders the page.
//
// The JavaScript talks to the agent only through its public REST API
// (/v1/..., the event stream, the exec websocket); assets/js/api.js holds
// the fetch helpers. Browsers open at most six HTTP/1.1 connections per
// host, shared by all tabs, so live updates ride on one event stream per
// tab (api.js watch: read, wait for a matching event, read again) and
// fall back to blocking queries, at most two at once, only while that
// stream is down; each page's requests are aborted when the router leaves
// it. window.__droverNet exposes the counts to the browser tests. One
// module per page lives in assets/js/pages/ (jobparts.js holds the views
// the job and task-group pages share); assets/js/ns.js is the top bar's
// namespace switcher, whose choice lives in the URL (?namespace=). Times
// on the Usage page are UTC, as the usage ledger's hourly buckets are.
//
// Imports: the standard library and api only (a layout test enforces it);
// package agent mounts Handler.
//
// Concurrency: Handler loads the assets once, on first use (sync.OnceValue;
// processes that never serve the UI, such as executors, pay nothing); the
// handler is immutable after that and safe for concurrent use.
package ui
