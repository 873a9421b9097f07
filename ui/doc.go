// Package ui embeds the web UI's static assets (plain HTML, CSS and ES
// modules, no build step) for the agent to serve at /ui.
package ui
