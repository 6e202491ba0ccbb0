package container

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/environment"
)

// TestMountProblems: a workspace mount or a tmpfs must be a clean absolute path that
// the launch does not mount itself, given once; a workspace directory must stay in it.
func TestMountProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mounts map[string]string
		tmpfs  []string
		want   string
	}{
		{map[string]string{"/tests": "tests"}, []string{"/logs"}, ""},
		{map[string]string{"/app": "."}, nil, ""},
		{map[string]string{"/etc": "."}, nil, "is or holds a path the launch mounts itself"},
		{map[string]string{"/usr/local/x": "."}, nil, "is or holds a path the launch mounts itself"},
		{map[string]string{"/": "."}, nil, "must be an absolute, clean path other than /"},
		{map[string]string{"/a/../b": "."}, nil, "must be an absolute, clean path"},
		{map[string]string{"/a": "../up"}, nil, "must be a clean directory of the workspace"},
		{map[string]string{"/a": "/abs"}, nil, "must be a clean directory of the workspace"},
		{nil, []string{"/tmp"}, "is or holds a path the launch mounts itself"},
		{nil, []string{"/run/agentproof"}, "is or holds a path the launch mounts itself"},
		{map[string]string{"/logs": "x"}, []string{"/logs"}, "is given twice"},
		{nil, []string{"rel"}, "must be an absolute"},
	} {
		got := strings.Join(MountProblems(tc.mounts, tc.tmpfs), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v %v: %q, want %q", tc.mounts, tc.tmpfs, got, tc.want)
		}
	}
}

// TestMountArgs: a workspace directory is mounted read-write at its container path and
// every tmpfs is fresh, bounded and writable by the container user.
func TestMountArgs(t *testing.T) {
	t.Parallel()
	l := &environment.Lease{Workspace: "/w", WorkspaceMounts: map[string]string{"/tests": "tests"}, Tmpfs: []string{"/logs"}}
	got := strings.Join(mountArgs(l), " ")
	want := "--volume /w/tests:/tests --tmpfs /logs:rw,nodev,nosuid,mode=1777,size=67108864"
	if got != want {
		t.Errorf("mountArgs = %q, want %q", got, want)
	}
}
