package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestPostRetries: post sends again on a 5xx or 429, gives up after five
// attempts with the last answer, stops at once on another 4xx, and ends on
// ctx. The waits are a millisecond (the backoff is the client's).
func TestPostRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int // then 200
		want     int   // requests
		wantErr  string
		cancelAt int // cancel ctx at this request (0: never)
	}{
		{name: "ok", answers: nil, want: 1},
		{name: "503 then ok", answers: []int{503, 429}, want: 3},
		{name: "503 five times", answers: []int{503, 503, 503, 503, 503, 503}, want: 5, wantErr: "503"},
		{name: "400", answers: []int{400}, want: 1, wantErr: "400"},
		{name: "cancelled", answers: []int{503, 503, 503, 503}, want: 2, wantErr: "context canceled", cancelAt: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				i := int(n.Add(1))
				if i == tc.cancelAt {
					cancel()
				}
				if i <= len(tc.answers) {
					http.Error(w, "no", tc.answers[i-1])
				}
			}))
			defer srv.Close()
			c := &client{url: srv.URL, http: srv.Client(), backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: postBackoff.Steps}}
			err := c.post(ctx, []byte("{}"))
			if got := int(n.Load()); got != tc.want {
				t.Errorf("%d requests, want %d", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("post: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("post: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
