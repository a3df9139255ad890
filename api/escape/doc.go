// Package escape is the one rule for showing a recorded string to a person:
// on a terminal (the kubectl plugin, the sql command, the aggregated API's
// table cells, which kubectl prints as they are) and, through the same set
// of characters, on the timeline page.
//
// Every recorded string was written by some cluster user. A character is
// hidden (Hidden) when it could drive a terminal, break or reorder a line,
// or not show at all: the C0 and C1 controls and DEL, tab and newline
// included; the format characters (Unicode category Cf: direction
// overrides and isolates, zero-width characters, the soft hyphen, tags);
// the line and paragraph separators; every space but U+0020 (the no-break
// space and the other odd spaces); the default-ignorable fillers; private
// use, surrogate and unassigned code points; and bytes that are not UTF-8.
// A hidden character is written as a Go escape (\x1b, \u202e, \xff for an
// invalid byte); every other character is written as itself.
//
// Slack writes a recorded string for Slack's mrkdwn (notifications): Line's
// escapes inside an inline code span, with mrkdwn's markup characters made
// inert, so a name can become neither a link nor a mention.
//
// The package does no I/O and imports only the standard library.
package escape
