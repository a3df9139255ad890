package escape

import (
	"strings"
	"testing"
)

// TestSlackHostile: recorded strings that would format, link or mention in
// a Slack message arrive as one inert code span.
func TestSlackHostile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"app-config", "`app-config`"},
		{"", "`\"\"`"},
		{"<!channel> deploy", "`&lt;!channel&gt; deploy`"},
		{"<@U024BE7LH>", "`&lt;@U024BE7LH&gt;`"},
		{"<https://evil.example|click me>", "`&lt;https://evil.example|click me&gt;`"},
		{"a & b", "`a &amp; b`"},
		{"&lt;!here&gt;", "`&amp;lt;!here&amp;gt;`"},
		{"x`<!here>`y", "`x\u02cb&lt;!here&gt;\u02cby`"},
		{"*bold* _it_ ~s~", "`*bold* _it_ ~s~`"},
		{"line\nbreak`", "`line\\nbreak\u02cb`"},
		{"rlo\u202eexe", "`rlo\\u202eexe`"},
	} {
		got := Slack(c.in)
		if got != c.want {
			t.Errorf("Slack(%q) = %q, want %q", c.in, got, c.want)
		}
		inner := got[1 : len(got)-1]
		if strings.ContainsAny(inner, "<>`\n") {
			t.Errorf("Slack(%q) = %q: markup left inside the span", c.in, got)
		}
	}
	for _, c := range hostile(t) {
		got := Slack(c.in)
		if inner := got[1 : len(got)-1]; strings.ContainsAny(inner, "<>`\n\r") || !clean(inner, false) {
			t.Errorf("Slack(%q) = %q: markup or a hidden character left", c.in, got)
		}
	}
	if got := SlackText("a <b> & c"); got != "a &lt;b&gt; &amp; c" {
		t.Errorf("SlackText = %q", got)
	}
}
