package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"time"

	"sigs.k8s.io/yaml"
)

// Destination types.
const (
	TypeAlertmanager = "alertmanager"
	TypeWebhook      = "webhook"
	TypeSlack        = "slack"
)

// Defaults of a Destination.
const (
	DefaultRate         = 1.0 // messages a second
	DefaultBurst        = 10
	DefaultTimeout      = 10 * time.Second
	DefaultResolveAfter = time.Hour
)

// Config is the file of --notify-config: the destinations rules may name.
type Config struct {
	Destinations []Destination `json:"destinations"`
}

// Destination is where messages go. Its URL and secrets are the
// operator's: a rule names a destination, never a URL.
type Destination struct {
	// Name is what spec.notify[].destination names.
	Name string `json:"name"`
	// Type is alertmanager, webhook or slack.
	Type string `json:"type"`
	// URL is the Alertmanager's base URL (…:9093; the sender posts to
	// /api/v2/alerts under it) or the webhook's URL. URLFile instead reads
	// it from a file at each send (a mounted Secret: a Slack incoming
	// webhook's URL is its credential).
	URL     string `json:"url,omitempty"`
	URLFile string `json:"urlFile,omitempty"`
	// SecretFile (webhook) holds the HMAC-SHA256 key the body is signed
	// with, read at each send (a mounted Secret, rotated in place).
	SecretFile string `json:"secretFile,omitempty"`
	// Tenants are namespace globs (path.Match) of the rules outside the
	// trusted namespaces that may name this destination; rules in the
	// trusted namespaces may always.
	Tenants []string `json:"tenants,omitempty"`
	// Rate and Burst bound the messages a second sent to it by one
	// replica; a message over them is dropped and counted.
	Rate  float64 `json:"rate,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// Timeout bounds one send (default 10s).
	Timeout Duration `json:"timeout,omitempty"`
	// ResolveAfter (alertmanager) is how long an alert stays firing
	// (default 1h): endsAt is the send time plus it.
	ResolveAfter Duration `json:"resolveAfter,omitempty"`
}

// Duration is a time.Duration written as "10s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "10s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// LoadConfig reads and checks a --notify-config file.
func LoadConfig(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("notify config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("notify config %s: %w", file, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("notify config %s: %w", file, err)
	}
	return &c, nil
}

// Validate checks the destinations and fills in their defaults.
func (c *Config) Validate() error {
	seen := map[string]bool{}
	for i := range c.Destinations {
		d := &c.Destinations[i]
		switch {
		case len(d.Name) > 63 || !nameRE.MatchString(d.Name):
			return fmt.Errorf("destination %q: name must be a DNS label", d.Name)
		case seen[d.Name]:
			return fmt.Errorf("destination %q given twice", d.Name)
		case d.Type != TypeAlertmanager && d.Type != TypeWebhook && d.Type != TypeSlack:
			return fmt.Errorf("destination %s: type %q: want alertmanager, webhook or slack", d.Name, d.Type)
		case (d.URL == "") == (d.URLFile == ""):
			return fmt.Errorf("destination %s: give url or urlFile", d.Name)
		case d.Type == TypeWebhook && d.SecretFile == "":
			return fmt.Errorf("destination %s: a webhook needs secretFile (its body is signed)", d.Name)
		case d.Rate < 0 || d.Burst < 0:
			return fmt.Errorf("destination %s: rate and burst must not be negative", d.Name)
		}
		if d.URL != "" {
			if err := checkURL(d.URL); err != nil {
				return fmt.Errorf("destination %s: %w", d.Name, err)
			}
		}
		for _, g := range d.Tenants {
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("destination %s: tenants %q: %w", d.Name, g, err)
			}
		}
		seen[d.Name] = true
		if d.Rate == 0 {
			d.Rate = DefaultRate
		}
		if d.Burst == 0 {
			d.Burst = DefaultBurst
		}
		if d.Timeout.Duration <= 0 {
			d.Timeout.Duration = DefaultTimeout
		}
		if d.ResolveAfter.Duration <= 0 {
			d.ResolveAfter.Duration = DefaultResolveAfter
		}
	}
	return nil
}

// CheckLease refuses a lease (Options.Lease, --notify-lease) that does
// not outlast every destination's timeout by DefaultLeaseMargin: a send
// is cut off that long before its lease runs out (a send still under way
// then could be made alongside by another replica), so a shorter lease
// would cut sends short of their timeout.
func (c *Config) CheckLease(lease time.Duration) error {
	for _, d := range c.Destinations {
		if lease < d.Timeout.Duration+DefaultLeaseMargin {
			return fmt.Errorf("--notify-lease %s does not outlast destination %s's timeout %s by %s: a send still under way could be made again by another replica", lease, d.Name, d.Timeout.Duration, DefaultLeaseMargin)
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("url must be an http or https URL")
	}
	return nil
}

// Allowed reports whether a rule in namespace ns (trusted or not) may name
// the destination: for filter.Options.NotifyAllowed.
func (c *Config) Allowed(destination, ns string, trusted bool) bool {
	if c == nil {
		return false
	}
	for _, d := range c.Destinations {
		if d.Name != destination {
			continue
		}
		if trusted {
			return true
		}
		for _, g := range d.Tenants {
			if ok, _ := path.Match(g, ns); ok {
				return true
			}
		}
		return false
	}
	return false
}

// url is the destination's URL, read from URLFile when given.
func (d *Destination) url() (string, error) {
	if d.URLFile == "" {
		return d.URL, nil
	}
	b, err := os.ReadFile(d.URLFile)
	if err != nil {
		return "", fmt.Errorf("url file: %w", err)
	}
	s := string(trimSpace(b))
	if err := checkURL(s); err != nil {
		return "", fmt.Errorf("url file %s: %w", d.URLFile, err)
	}
	return s, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
