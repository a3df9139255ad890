// Package deletions is kubectl record deletions: who deleted what, when,
// as whom, each cascade (a namespace's or an owner's deletion) listed
// under the deletion that started it.
package deletions
