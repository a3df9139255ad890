package shipcheck

import (
	"testing"

	"github.com/options-record/options-record/store/pgtest"
)

// TestMain stops the PostgreSQL that TestServeAsDeployed starts.
func TestMain(m *testing.M) { pgtest.Main(m) }
