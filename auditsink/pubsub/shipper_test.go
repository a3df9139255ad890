package pubsub_test

import (
	"net/http"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/pubsub"
	"github.com/options-record/options-record/auditsink/pubsub/pubsubtest"
)

// The test shipper and token issuer are pubsubtest's (the e2e tests use
// them too); these are their names here.

const (
	testAudience = "https://sink.example/gke/pubsub"
	testAccount  = "push@proj.iam.gserviceaccount.com"
)

type claims = pubsubtest.Claims

func toGKE(t testing.TB, ev *auditv1.Event) pubsub.LogEntry { return pubsubtest.ToGKE(t, ev) }

func pushBody(t testing.TB, entry pubsub.LogEntry, publish time.Time) []byte {
	return pubsubtest.PushBody(t, entry, publish)
}

func newGoogle(t testing.TB) *pubsubtest.Google {
	return pubsubtest.NewGoogle(t, testAudience, testAccount)
}

func push(t testing.TB, c *http.Client, url, token string, body []byte) int {
	return pubsubtest.Push(t, c, url, token, body)
}
