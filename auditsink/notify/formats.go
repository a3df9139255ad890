package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/escape"
)

// Headers of the webhook format.
const (
	// HeaderKey is the message's key: a receiver drops a second delivery.
	HeaderKey = "X-Options-Record-Key"
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256 of
	// "<unix seconds>." + body>" under the destination's secret.
	HeaderSignature = "X-Options-Record-Signature"
)

// Sign is the HeaderSignature value of body sent at t with secret.
func Sign(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a HeaderSignature value against body and secret, and that
// it was made within maxAge of now: what a receiver does.
func Verify(secret, body []byte, header string, now time.Time, maxAge time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("malformed signature header")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return fmt.Errorf("signature made %s from now: too old or from the future", d)
	}
	want := Sign(secret, body, time.Unix(sec, 0))
	if !hmac.Equal([]byte(want), []byte("t="+ts+",v1="+sig)) {
		return fmt.Errorf("signature does not verify")
	}
	return nil
}

// webhookBody is the webhook's JSON: the Incident with its summary, hidden
// characters written as JSON escapes.
func webhookBody(in *Incident) ([]byte, error) {
	b, err := json.Marshal(struct {
		*Incident
		Summary string `json:"summary"`
	}{in, escape.Line(in.Summary())})
	if err != nil {
		return nil, err
	}
	return escape.JSON(b), nil
}

// amAlert is one alert of Alertmanager's v2 API (POST /api/v2/alerts;
// models.PostableAlert).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// AlertName is the alertname of every alert the sender posts.
const AlertName = "OptionsRecordChange"

// alertmanagerBody is one alert for the incident: labels to route and
// silence on (cluster, namespace, user, kind, the message key, which keeps
// two incidents apart), annotations to read. Recorded strings are written
// as escape.Line writes them: Alertmanager's receivers pass them on.
func alertmanagerBody(in *Incident, now time.Time, resolveAfter time.Duration) ([]byte, error) {
	l := escape.Line
	labels := map[string]string{
		"alertname":        AlertName,
		"cluster":          l(in.Cluster),
		"incident":         in.Kind,
		"notification_key": in.Key,
	}
	if in.Initiator != nil {
		labels["user"] = l(in.Initiator.User)
	}
	if ns := in.singleNamespace(); ns != "" {
		labels["namespace"] = l(ns)
	}
	if r := in.singleResource(); r != "" {
		labels["resource"] = l(r)
	}
	ann := map[string]string{
		"summary":     l(in.Summary()),
		"description": describe(in, l),
	}
	if len(in.Undo) > 0 {
		ann["undo"] = strings.Join(mapStrings(in.Undo, l), "\n")
	}
	if a := in.Initiator; a != nil {
		ann["initiator"] = who(a, l)
	}
	return json.Marshal([]amAlert{{Labels: labels, Annotations: ann, StartsAt: in.From.UTC(), EndsAt: now.Add(resolveAfter).UTC()}})
}

func mapStrings(ss []string, f func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// singleNamespace is the one namespace every change is in, or "".
func (in *Incident) singleNamespace() string {
	if in.Namespace != "" {
		return in.Namespace
	}
	ns := ""
	for i, c := range in.Changes {
		if i > 0 && c.Namespace != ns {
			return ""
		}
		ns = c.Namespace
	}
	if len(in.Changes) < in.Count {
		return ""
	}
	return ns
}

// singleResource is the one resource of every change, or "".
func (in *Incident) singleResource() string {
	if len(in.ByResource) != 1 {
		return ""
	}
	for r := range in.ByResource {
		return r
	}
	return ""
}

// who describes an actor with f escaping each recorded string.
func who(a *Actor, f func(string) string) string {
	s := f(a.User)
	if a.ImpersonatedUser != "" {
		s += " as " + f(a.ImpersonatedUser)
	}
	if len(a.SourceIPs) > 0 {
		s += " from " + strings.Join(mapStrings(a.SourceIPs, f), ", ")
	}
	if a.UserAgent != "" {
		s += " (client says " + f(a.UserAgent) + ")"
	}
	return s + " at " + a.At.UTC().Format(time.RFC3339)
}

// describe is the plain-text body: counts by resource, then the changes
// listed.
func describe(in *Incident, f func(string) string) string {
	var b strings.Builder
	one, many := "change", "changes"
	if in.Kind == KindRefused {
		one, many = "refused attempt", "refused attempts"
	}
	if in.Count == 1 {
		fmt.Fprintf(&b, "1 %s at %s", one, in.From.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "%d %s between %s and %s", in.Count, many, in.From.UTC().Format(time.RFC3339), in.To.UTC().Format(time.RFC3339))
	}
	if in.Cascade > 0 {
		fmt.Fprintf(&b, " (%d by the namespace controller, for the namespace's deletion)", in.Cascade)
	}
	b.WriteString(": " + byResource(in, f) + "\n")
	for _, c := range in.Changes {
		if c.Refused {
			fmt.Fprintf(&b, "refused (%d): ", c.Code)
		}
		fmt.Fprintf(&b, "%s %s/%s", c.Verb, f(resourceName(c.Group, c.Resource)), f(c.Name))
		if c.Namespace != "" {
			fmt.Fprintf(&b, " in %s", f(c.Namespace))
		}
		fmt.Fprintf(&b, " by %s\n", f(c.User))
	}
	if n := in.Count - len(in.Changes); n > 0 {
		fmt.Fprintf(&b, "and %d more\n", n)
	}
	return b.String()
}

func byResource(in *Incident, f func(string) string) string {
	rs := make([]string, 0, len(in.ByResource))
	for r := range in.ByResource {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d %s", in.ByResource[r], f(r))
	}
	return strings.Join(parts, ", ")
}

// slackBody is a Slack-compatible incoming webhook's payload: mrkdwn text
// in which every recorded string is an inert code span (escape.Slack), and
// no link unfurled.
func slackBody(in *Incident) ([]byte, error) {
	s, t := escape.Slack, escape.SlackText
	var b strings.Builder
	fmt.Fprintf(&b, "*Options Record* · cluster %s · %s\n", s(in.Cluster), t(in.Kind))
	switch {
	case in.Kind == KindNamespaceDeletion && in.Initiator != nil:
		fmt.Fprintf(&b, "%s deleted namespace %s; %d changes recorded with it\n", s(in.Initiator.User), s(in.Namespace), in.Count)
	case in.Kind == KindNamespaceDeletion:
		fmt.Fprintf(&b, "namespace %s emptied (the record holds no user's deletion of it); %d changes\n", s(in.Namespace), in.Count)
	case in.Kind == KindRefused && in.Initiator != nil:
		fmt.Fprintf(&b, "%s was refused %d times (nothing changed)\n", s(in.Initiator.User), in.Count)
	case in.Initiator != nil && in.Count == 1:
		c := in.Changes[0]
		fmt.Fprintf(&b, "%s %s %s/%s", s(in.Initiator.User), pastTense(c.Verb), s(resourceName(c.Group, c.Resource)), s(c.Name))
		if c.Namespace != "" {
			fmt.Fprintf(&b, " in namespace %s", s(c.Namespace))
		}
		b.WriteString("\n")
	case in.Initiator != nil:
		fmt.Fprintf(&b, "%s made %d changes\n", s(in.Initiator.User), in.Count)
	}
	if a := in.Initiator; a != nil {
		fmt.Fprintf(&b, "*Who:* %s\n", who(a, s))
	}
	b.WriteString("*What:* " + describe(in, s))
	if len(in.Undo) > 0 {
		b.WriteString("*Undo:*\n")
		for _, u := range in.Undo {
			b.WriteString(s(u) + "\n")
		}
	}
	fmt.Fprintf(&b, "key %s", t(in.Key))
	return json.Marshal(map[string]any{"text": b.String(), "mrkdwn": true, "unfurl_links": false, "unfurl_media": false})
}
