package tamper

import (
	"time"

	"github.com/options-record/options-record/store"
)

func setLogCutoffWait(d time.Duration) time.Duration {
	old := store.LogCutoffWait
	store.LogCutoffWait = d
	return old
}
