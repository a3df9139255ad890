package sqlcmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/options-record/options-record/store/pgtest"
)

// The database password never reaches psql's command line (readable by
// every user of the machine) nor an error message.
func TestPsqlGetsThePasswordOutOfItsArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn, password string
	}{
		{"postgres://record:s3cret-pw@db.example:5432/record?sslmode=verify-full", "s3cret-pw"},
		{"postgresql://record@db.example/record?password=s3cret-pw&sslmode=require", "s3cret-pw"},
		{"host=db.example user=record password=s3cret-pw dbname=record sslmode=require", "s3cret-pw"},
		{"host=db.example password='s3cret pw\\'x' dbname=record", "s3cret pw'x"},
		{"password=s3cret-pw host=/run/pg", "s3cret-pw"},
		{"postgres://record@/record?host=/run/pg", ""},
	}
	for _, tt := range tests {
		cmd := psqlCommand(context.Background(), "/usr/bin/psql", tt.dsn, "SELECT 1")
		args := strings.Join(cmd.Args, " ")
		if strings.Contains(args, "s3cret") {
			t.Errorf("%s: psql's arguments hold the password: %s", tt.dsn, args)
		}
		env := strings.Join(cmd.Env, "\n")
		if tt.password != "" && !strings.Contains(env, "PGPASSWORD="+tt.password+"\n") && !strings.HasSuffix(env, "PGPASSWORD="+tt.password) {
			t.Errorf("%s: PGPASSWORD not set to the password", tt.dsn)
		}
		if dsn, _ := splitPassword(tt.dsn); !strings.Contains(dsn, "db.example") && !strings.Contains(dsn, "/run/pg") {
			t.Errorf("%s: the rest of the connection string was lost: %s", tt.dsn, dsn)
		}
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestTableCellsEscapeWhatCouldForgeOutput: the sql command shows values
// from a real PostgreSQL by api/escape's rule, as the plugin does.
func TestTableCellsEscapeWhatCouldForgeOutput(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	for in, want := range map[string]string{
		"plain name":          "plain name",
		"café":                "café",
		"a\tb":                `"a\tb"`,
		"x\nforged row":       `"x\nforged row"`,
		"\x1b]0;pwned\x07":    `"\x1b]0;pwned\a"`,
		"rtl\u202eoverride":   `"rtl\u202eoverride"`,
		"line\u2028separator": `"line\u2028separator"`,
		"no\u00a0break":       `"no\u00a0break"`, // issue 31: the plugin showed it raw
		"hangul\u3164filler":  `"hangul\u3164filler"`,
		"csi\u009b2J":         `"csi\u009b2J"`,
	} {
		lit := "E'"
		for _, r := range in {
			lit += fmt.Sprintf(`\U%08x`, r)
		}
		var out strings.Builder
		if err := runQuery(context.Background(), dsn, "SELECT "+lit+"' AS v", &out); err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(out.String(), "\n"); len(got) != 4 || got[1] != want {
			t.Errorf("sql shows %q as %q, want the cell %s", in, out.String(), want)
		}
	}
}
