// Package shortname owns the short names of the record: the name a person
// reads and types for a recorded version, deletion, change or failed
// attempt, such as app-config-3f9a2c1b. A short name is the object's name,
// made DNS-1123 safe and cut to a readable length, a dash, and the first
// digits of the hash that ends the long name (<object uid>.<64 hex digits>,
// or <time>.<64 hex digits> for an attempt): it is derived from what the
// record holds, never stored, and the long name keeps working.
//
// It owns the one rule that makes a short name (Of), the one parser of a
// long name (ParseLong: every reader of record names calls it; the hex
// digits written in lower case, read in either case), the one parser of a
// name a person typed (Parse) and the one rule of what a typed name matches
// (Query.Matches). Resolving a name against the record, and leaving out
// what the caller may not read, is the history service's (ResolveVersion).
//
// It must never do I/O nor import anything outside the standard library:
// the plugin and both front doors use it.
package shortname
