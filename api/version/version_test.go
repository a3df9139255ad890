package version

import "testing"

// TestKubernetes: the release as a Kubernetes component reports it at
// /version: major and minor from the tag, the tree state from -dirty.
func TestKubernetes(t *testing.T) {
	for _, c := range []struct {
		in                                     Info
		major, minor, commit, tree, gitVersion string
	}{
		{Info{Version: "v0.1.0", Commit: "abc"}, "0", "1", "abc", "clean", "v0.1.0"},
		{Info{Version: "v1.12.3-rc.1", Commit: "abc-dirty"}, "1", "12", "abc", "dirty", "v1.12.3-rc.1"},
		{Info{Version: "v0.1.0-3-gabc-dirty", Commit: "abc"}, "0", "1", "abc", "dirty", "v0.1.0-3-gabc-dirty"},
		{Info{Version: Dev}, "0", "0", "", "", Dev},
		{Info{Version: "garbage"}, "", "", "", "", "garbage"},
	} {
		k := c.in.Kubernetes()
		if k.Major != c.major || k.Minor != c.minor || k.GitCommit != c.commit || k.GitTreeState != c.tree || k.GitVersion != c.gitVersion {
			t.Errorf("%+v: %+v", c.in, *k)
		}
	}
}

// TestGetDefaults: an unstamped build says v0.0.0-dev, never an empty
// version.
func TestGetDefaults(t *testing.T) {
	saved := Version
	t.Cleanup(func() { Version = saved })
	Version = ""
	if v := Get().Version; v != Dev {
		t.Errorf("Get().Version = %q with no stamp, want %q", v, Dev)
	}
}
