package app

import (
	"encoding/json"
	"net/http"
	"testing"

	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/api/version"
)

// TestAggregatedReportsTheRelease: the aggregated API's /version (here
// through serve's record door, the same generic server) is this build's
// release, as the linker stamped it into api/version, not the
// k8s.io/apiserver library's. Not parallel: it sets the stamp, read when
// the server is built.
func TestAggregatedReportsTheRelease(t *testing.T) {
	saved := [3]string{version.Version, version.Commit, version.BuildDate}
	t.Cleanup(func() { version.Version, version.Commit, version.BuildDate = saved[0], saved[1], saved[2] })
	version.Version, version.Commit, version.BuildDate = "v9.8.7-test.1", "0123456789abcdef0123456789abcdef01234567", "2031-02-03T04:05:06Z"

	kube := newFakeKube(t, false)
	addr, pool := startRecordDoor(t, kube, restoreapi.Options{})
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/version", nil)
	req.Header.Set("Authorization", "Bearer good-version")
	resp, err := clientFrom(pool, "127.0.0.1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got apimachineryversion.Info
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /version: %s, %v", resp.Status, err)
	}
	want := *version.Get().Kubernetes()
	if got != want || got.GitVersion != "v9.8.7-test.1" || got.GitCommit != version.Commit || got.BuildDate != version.BuildDate || got.Major != "9" || got.Minor != "8" {
		t.Errorf("/version = %+v\nwant %+v", got, want)
	}
}
