package pgtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// PlanProblems reads an EXPLAIN (FORMAT JSON) plan, made with sequential
// scans disabled, and names what shows that no index serves the query: a
// sequential scan of a table of the record, or a subquery run once per
// result row that reads every row of a cluster. The tests of the record's
// queries (package store's, store/reads') check their plans with it.
func PlanProblems(plan []byte) []string {
	var doc []map[string]any
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) == 0 {
		return []string{fmt.Sprintf("not an EXPLAIN (FORMAT JSON) plan: %v", err)}
	}
	var problems []string
	var visit func(n map[string]any, perRow bool)
	visit = func(n map[string]any, perRow bool) {
		perRow = perRow || n["Parent Relationship"] == "SubPlan"
		rel, _ := n["Relation Name"].(string)
		if rel == "" { // a Bitmap Index Scan names only its index
			rel, _ = n["Index Name"].(string)
		}
		record := strings.HasPrefix(rel, "events") || strings.HasPrefix(rel, "object_versions")
		cond, _ := n["Index Cond"].(string)
		switch n["Node Type"] {
		case "Seq Scan":
			if record {
				problems = append(problems, fmt.Sprintf("sequential scan of %s: no index serves this query", rel))
			}
		case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
			if record && perRow && onlyCluster(cond) {
				problems = append(problems, fmt.Sprintf("a per-row subquery reads a whole cluster of %s (%s)", rel, cond))
			}
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			visit(k.(map[string]any), perRow)
		}
	}
	visit(doc[0]["Plan"].(map[string]any), false)
	return problems
}

// onlyCluster reports whether an index condition bounds nothing but the
// cluster: the scan reads every row of the cluster.
func onlyCluster(cond string) bool {
	return !strings.ContainsAny(clusterCond.ReplaceAllString(cond, ""), "=<>")
}

var clusterCond = regexp.MustCompile(`\(cluster = [^()]*\)`)
