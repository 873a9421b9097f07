package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
)

// TestUIVariables drives the Variables pages against a dev agent's
// variables API: the list and its prefix filter, create, view (values
// hidden until asked), an edit refused by check-and-set after someone
// else changed the variable (their change kept), the edit again, and
// delete.
func TestUIVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium(t)
	agent := startDevAgent(t)
	if err := agent.send("PUT", "/v1/var/team/db", api.Variable{Items: map[string]string{"user": "app", "password": "s3cret"}}, nil, nil); err != nil {
		t.Fatalf("put team/db: %v", err)
	}
	if err := agent.send("PUT", "/v1/var/other/x", api.Variable{Items: map[string]string{"k": "v"}}, nil, nil); err != nil {
		t.Fatalf("put other/x: %v", err)
	}
	read := func(path string) (*api.Variable, error) {
		var v api.Variable
		err := agent.getJSON("/v1/var/"+path, &v)
		return &v, err
	}
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 30 * time.Second

	// The list, then filtered by prefix (kept in the URL).
	do(t, ctx, "open variables", chromedp.Navigate(agent.base+"/ui/variables"))
	until(t, ctx, "both listed", `document.querySelectorAll('#vars-table tr[data-path]').length === 2`, long)
	do(t, ctx, "filter by prefix", chromedp.SetValue(chromedp.ID("var-prefix"), "team"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#var-prefix').dispatchEvent(new Event('input'))`))
	until(t, ctx, "only team/db", `document.querySelectorAll('#vars-table tr[data-path]').length === 1 && !!document.querySelector('#vars-table tr[data-path="team/db"]') && location.search.includes('prefix=team')`, long)
	shot.take("variables")

	// Create team/cache from the UI.
	click(t, ctx, "create", "#var-create")
	until(t, ctx, "form with the prefix as path", `document.querySelector('#var-path')?.value === 'team'`, long)
	do(t, ctx, "fill the form", chromedp.SetValue(chromedp.ID("var-path"), "team/cache"),
		chromedp.Evaluate[chromedp.Void](`(() => { const r = document.querySelector('#var-form tr.var-item'); r.querySelector('.var-key').value = 'host'; r.querySelector('.var-value').value = 'redis:6379'; })()`))
	click(t, ctx, "save", "#var-save")
	until(t, ctx, "the new variable's page", `location.pathname === '/ui/variables/var/team/cache' && !!document.querySelector('#var-items tr[data-key="host"]')`, long)
	if v, err := read("team/cache"); err != nil || v.Items["host"] != "redis:6379" {
		t.Fatalf("team/cache after Create in the UI: %+v (%v), want host=redis:6379", v, err)
	}
	until(t, ctx, "values hidden", `!`+textHas("#var-items", "redis:6379"), long)
	click(t, ctx, "show values", "#var-show")
	until(t, ctx, "values shown", textHas(`#var-items tr[data-key="host"] .var-value`, "redis:6379"), long)

	// Edit team/db: someone else changes it first, so the save is refused.
	do(t, ctx, "open team/db", chromedp.Navigate(agent.base+"/ui/variables/var/team/db"))
	click(t, ctx, "edit", "#var-edit")
	until(t, ctx, "edit form with the items", `document.querySelectorAll('#var-form tr.var-item').length === 2 && !!document.querySelector('#var-cas')`, long)
	if err := agent.send("PUT", "/v1/var/team/db", api.Variable{Items: map[string]string{"user": "app", "password": "rotated"}}, nil, nil); err != nil {
		t.Fatalf("change team/db behind the form: %v", err)
	}
	do(t, ctx, "change the password in the form", chromedp.Evaluate[chromedp.Void](`(() => {
		const r = [...document.querySelectorAll('#var-form tr.var-item')].find((r) => r.querySelector('.var-key').value === 'password');
		r.querySelector('.var-value').value = 'mine'; })()`))
	click(t, ctx, "save", "#var-save")
	until(t, ctx, "check-and-set conflict shown", textHas("#var-note .error", "someone changed this variable"), long)
	shot.take("variable-conflict")
	if v, err := read("team/db"); err != nil || v.Items["password"] != "rotated" {
		t.Fatalf("team/db after a refused save: %+v (%v), want the other change (rotated) kept", v, err)
	}
	// Opened again, the form is at the new index and the save goes through.
	do(t, ctx, "reload the form", chromedp.Reload())
	until(t, ctx, "form again", `document.querySelectorAll('#var-form tr.var-item').length === 2`, long)
	do(t, ctx, "change the password again", chromedp.Evaluate[chromedp.Void](`(() => {
		const r = [...document.querySelectorAll('#var-form tr.var-item')].find((r) => r.querySelector('.var-key').value === 'password');
		r.querySelector('.var-value').value = 'mine'; })()`))
	click(t, ctx, "save", "#var-save")
	until(t, ctx, "back on the variable's page", `location.pathname === '/ui/variables/var/team/db' && !location.search.includes('edit')`, long)
	if v, err := read("team/db"); err != nil || v.Items["password"] != "mine" || v.Items["user"] != "app" {
		t.Fatalf("team/db after Save in the UI: %+v (%v), want password=mine user=app", v, err)
	}

	// Delete (two-step confirm).
	click(t, ctx, "delete", "#var-delete")
	until(t, ctx, "delete armed", textHas("#var-delete", "Confirm"), long)
	click(t, ctx, "confirm delete", "#var-delete")
	until(t, ctx, "back on the list", `location.pathname === '/ui/variables' && document.querySelectorAll('#vars-table tr[data-path]').length === 2`, long)
	if _, err := read("team/db"); err == nil {
		t.Fatal("team/db still readable after Delete in the UI")
	}
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
