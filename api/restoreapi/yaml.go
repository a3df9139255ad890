package restoreapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restore/manifest"
)

// toYAML encodes v as YAML, through JSON, as kubectl does, but so that every
// string reads back as it was (manifest.JSONToYAML).
func toYAML(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode as JSON: %w", err)
	}
	return jsonToYAML(data)
}

func jsonToYAML(data []byte) ([]byte, error) {
	out, err := manifest.JSONToYAML(data)
	if err != nil {
		return nil, fmt.Errorf("encode as YAML: %w", err)
	}
	return out, nil
}

// manifestHeader is the report of a YAML manifest, as comment lines. Every
// recorded value in it was written by some cluster user (an ownerReference
// name may hold a newline followed by a whole ClusterRoleBinding), and the
// manifest is made to be piped into kubectl apply: each value is quoted
// with every control and non-ASCII character escaped, so that no value can
// end its comment line, whatever YAML version reads it (YAML 1.1 also
// breaks lines at U+0085, U+2028 and U+2029).
func manifestHeader(v *history.Version, dropped []restore.DroppedOwner) []byte {
	q := strconv.QuoteToASCII
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "# %s %s/%s, version %s (%s by %s at %s)\n", q(v.Kind), q(v.Namespace), q(v.Name), q(v.ID), q(v.Verb),
		q(v.Author()), v.ChangedAt.UTC().Format("2006-01-02T15:04:05Z"))
	for _, d := range dropped {
		fmt.Fprintf(&hdr, "# ownerReference %s %s (uid %s) dropped: %s\n", q(d.Kind), q(d.Name), q(d.UID), q(d.Reason))
	}
	return []byte(hdr.String())
}
