package controlplane

import "testing"

// TestCommandResultRef: Ref answers the id of the first entity ref with the prefix,
// never a ref whose prefix only starts the same, and "" when none has it.
func TestCommandResultRef(t *testing.T) {
	t.Parallel()
	r := CommandResult{EntityRefs: []string{"task:task-1", "comments:x", "comment:c-1", "comment:c-2", "revision:"}}
	for _, tc := range []struct{ prefix, want string }{
		{"task", "task-1"},
		{"comment", "c-1"},
		{"revision", ""},
		{"interaction", ""},
		{"", ""},
	} {
		if got := r.Ref(tc.prefix); got != tc.want {
			t.Errorf("Ref(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
	if got := (CommandResult{}).Ref("comment"); got != "" {
		t.Errorf("Ref of no refs = %q, want \"\"", got)
	}
}
