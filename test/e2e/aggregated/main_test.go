package aggregated

import (
	"testing"

	"github.com/options-record/options-record/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
