package tamper

import (
	"context"
	"testing"
	"time"
)

func TestZZSpeed(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 400))
	ctx := context.Background()
	for range 3 {
		t0 := time.Now()
		var n int
		if err := e.st.Pool().QueryRow(ctx, "SELECT count(*) FROM log_pending_rows").Scan(&n); err != nil {
			t.Fatal(err)
		}
		t.Log(n, time.Since(t0))
	}
}
