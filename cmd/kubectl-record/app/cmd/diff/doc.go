// Package diff is kubectl record diff: what changed between two recorded
// versions, or between a version and the live object, as a unified diff
// of the changed paths (lists matched by key, as the apiserver matches
// them), every value escaped for the terminal.
package diff
