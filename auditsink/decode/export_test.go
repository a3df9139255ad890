package decode

import (
	"io"
	"time"
)

// NewLogDecoder decodes the audit log r, as a LogFile decodes its file.
func NewLogDecoder(r io.Reader, now time.Time) *logDecoder { return newLogDecoder(r, now) }
