package config

import "testing"

// user.denylist reaches the client options as set; an explicitly empty
// list must stay present (it replaces the exec driver's default "root").
func TestUserDenylistOption(t *testing.T) {
	for src, want := range map[string]string{
		"client {\n options = { \"user.denylist\" = \"root,admin\" }\n}\n": "root,admin",
		"client {\n options = { \"user.denylist\" = \"\" }\n}\n":           "",
	} {
		c, err := Parse([]byte(src), "denylist.hcl", Default())
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, ok := c.Client.Options["user.denylist"]
		if !ok || got != want {
			t.Errorf("%s: user.denylist = %q (set %v), want %q", src, got, ok, want)
		}
	}
}
