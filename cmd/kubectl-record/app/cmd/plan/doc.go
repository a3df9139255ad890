// Package plan is kubectl record plan: plans that restore many objects
// (as-of a time, or undoing one user), shown step by step, and executed
// as the caller after a dry run, carrying the dry run's digest.
package plan
