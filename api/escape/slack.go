package escape

import "strings"

// slackEntities are the three characters Slack's mrkdwn reads as markup:
// & starts an entity, < and > enclose links, user and channel mentions
// (<@U…>, <!channel>, <!here>) and dates. Slack asks senders to write them
// as these entities, and shows the entities as the characters.
var slackEntities = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Slack is s for a Slack-compatible incoming webhook's mrkdwn text: an
// inline code span, in which Slack applies no formatting (*bold*, _italic_,
// ~strike~), links no bare URL or domain (evil.example.com) and expands no
// mention (@channel), holding s as Line writes it (every hidden character,
// newline included, as a Go escape, so the span cannot end early), with &,
// < and > as entities (so neither a link <http://…|text> nor a mention
// <!here> can form) and every backtick as U+02CB ˋ (a backtick would end the
// span). An empty s is shown as an empty pair of quotes inside the span.
func Slack(s string) string {
	s = Line(s)
	if s == "" {
		s = `""`
	}
	return "`" + slackEntities.Replace(strings.ReplaceAll(s, "`", "\u02cb")) + "`"
}

// SlackText is text written by the program (not recorded) for mrkdwn: &,
// < and > as entities, so only the program's own markup (*bold*, code
// spans made by Slack) formats it.
func SlackText(s string) string { return slackEntities.Replace(s) }
