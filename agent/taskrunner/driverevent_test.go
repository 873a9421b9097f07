package taskrunner

import "testing"

func TestParseTaskID(t *testing.T) {
	for _, tc := range []struct {
		id, alloc, task string
		ok              bool
	}{
		{"a1b2/web/0f0f0f0f", "a1b2", "web", true},
		{"a1b2/web/x/0f0f0f0f", "a1b2", "web/x", true},
		{"a1b2/web", "", "", false},
		{"/web/0f", "", "", false},
		{"a1b2//0f", "", "", false},
		{"a1b2/web/", "", "", false},
		{"plain", "", "", false},
	} {
		alloc, task, ok := ParseTaskID(tc.id)
		if alloc != tc.alloc || task != tc.task || ok != tc.ok {
			t.Errorf("ParseTaskID(%q) = %q, %q, %v; want %q, %q, %v", tc.id, alloc, task, ok, tc.alloc, tc.task, tc.ok)
		}
	}
}
