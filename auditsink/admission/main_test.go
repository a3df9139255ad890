package admission

import (
	"testing"

	"github.com/options-record/options-record/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
