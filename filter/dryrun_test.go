package filter

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzQueryDryRun checks queryDryRun against net/url, which is how the
// apiserver reads query parameters.
func FuzzQueryDryRun(f *testing.F) {
	for _, seed := range []string{
		"/api/v1/namespaces/prod/configmaps?dryRun=All",
		"/api/v1/namespaces/prod/configmaps?fieldManager=kubectl&dryRun=All",
		"/api/v1/namespaces/prod/configmaps?x=1;dryRun=All",
		"/api/v1/namespaces/prod/configmaps?dry%52un=All",
		"/api/v1/namespaces/prod/configmaps?dryRun=%zz",
		"/api/v1/namespaces/prod/configmaps?dryRun",
		"/api/v1/namespaces/prod/configmaps/dryRun",
		"/api/v1/namespaces/prod/configmaps?dry+Run=All&%=1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		got := queryDryRun(uri)
		_, rawQuery, _ := strings.Cut(uri, "?")
		values, _ := url.ParseQuery(rawQuery)
		_, want := values["dryRun"]
		if got != want {
			t.Fatalf("queryDryRun(%q) = %v, net/url says %v", uri, got, want)
		}
	})
}
