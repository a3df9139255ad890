package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseTrustedNamespaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    map[string][]string
		wantErr bool
	}{
		{name: "none", in: nil, want: map[string][]string{}},
		{name: "several", in: []string{"prod-eu=options-record,platform", "staging=ops"},
			want: map[string][]string{"prod-eu": {"options-record", "platform"}, "staging": {"ops"}}},
		{name: "trust none", in: []string{"prod-eu="}, want: map[string][]string{"prod-eu": {}}},
		{name: "no =", in: []string{"prod-eu"}, wantErr: true},
		{name: "no cluster", in: []string{"=ops"}, wantErr: true},
		{name: "invalid namespace", in: []string{"c=Ops"}, wantErr: true},
		{name: "cluster twice", in: []string{"c=a", "c=b"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseTrustedNamespaces(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesOptionsRejectShortCeilings(t *testing.T) {
	t.Parallel()
	if _, err := (RulesOptions{MaxRetention: 30 * time.Minute}).compileOptions(); err == nil {
		t.Error("--max-retention 30m accepted")
	}
}
