package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/eventhubs"
	"github.com/options-record/options-record/auditsink/firehose"
)

// The sources of managed clusters, whose apiserver flags nobody can set
// (docs/managed-clusters.md): EKS's Firehose endpoint, served on the
// webhook's address, and AKS's Event Hubs consumer.

// FirehosePath is where the webhook's address serves the Firehose HTTP
// endpoint (the URL configured on the Firehose stream:
// https://<host>/firehose; Firehose connects on port 443).
const FirehosePath = "/firehose"

// FirehoseOptions configure EKS's Firehose HTTP endpoint.
type FirehoseOptions struct {
	// AccessKeyFile holds the access key configured on the stream.
	AccessKeyFile string
	// LogGroups maps a log group (/aws/eks/<name>/cluster) to the cluster
	// its events are recorded for; empty: every log group's are --cluster's.
	LogGroups map[string]string
	// MaxDecodedBytes caps what a request's records decompress to.
	MaxDecodedBytes int64
}

// EventHubsOptions configure AKS's Event Hubs consumer.
type EventHubsOptions struct {
	// Brokers: <namespace>.servicebus.windows.net:9093.
	Brokers []string
	// Name is the event hub (the Kafka topic); Group its consumer group.
	Name, Group string
	// ConnectionStringFile holds the connection string (SASL PLAIN
	// password of the user $ConnectionString); empty: no SASL.
	ConnectionStringFile string
	// Cluster is the cluster the events are recorded for (default --cluster).
	Cluster string
	// TLS connects with TLS (Event Hubs requires it), verified with the
	// system's roots or CAFile.
	TLS    bool
	CAFile string
}

// validateManaged refuses incomplete managed-cluster sources.
func (o *ServeOptions) validateManaged() error {
	if f := o.Firehose; f != nil {
		if f.AccessKeyFile == "" {
			return errors.New("--firehose-log-group without --firehose-access-key-file")
		}
		for g, c := range f.LogGroups {
			if g == "" || c == "" {
				return fmt.Errorf("--firehose-log-group %q=%q: want LOG_GROUP=CLUSTER", g, c)
			}
		}
	}
	if e := o.EventHubs; e != nil {
		switch {
		case len(e.Brokers) == 0:
			return errors.New("--eventhubs-name without --eventhubs-brokers")
		case e.Name == "":
			return errors.New("--eventhubs-brokers without --eventhubs-name (the event hub)")
		case e.Group == "":
			return errors.New("--eventhubs-consumer-group is empty")
		}
	}
	return nil
}

// withFirehose serves the Firehose endpoint at FirehosePath beside the
// webhook, under its bounds; every other path is the webhook's, as before.
func (p *ingestProcess) withFirehose(h *auditsink.Handler) (http.Handler, error) {
	f := p.o.Firehose
	if f == nil {
		return h, nil
	}
	d, err := firehose.New(firehose.Options{AccessKeyFile: f.AccessKeyFile, ReloadInterval: p.o.CredentialsInterval,
		Clusters: f.LogGroups, DefaultCluster: p.o.Cluster, MaxDecodedBytes: f.MaxDecodedBytes,
		Registerer: p.reg, Logger: p.log.With("source", "firehose")})
	if err != nil {
		return nil, err
	}
	p.log.Info("serving the Firehose HTTP endpoint for EKS clusters", "path", FirehosePath, "log_groups", len(f.LogGroups))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == FirehosePath {
			h.ServeDelivery(w, r, d)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}

// eventHubs is the component consuming AKS's audit log from Event Hubs
// (it needs the prepared store: its checkpoints are there).
func (p *ingestProcess) eventHubs() component {
	return component{"event hubs", func(ctx context.Context) (func(context.Context) error, error) {
		e := p.o.EventHubs
		cluster := e.Cluster
		if cluster == "" {
			cluster = p.o.Cluster
		}
		o := eventhubs.Options{Brokers: e.Brokers, Topic: e.Name, Group: e.Group, Cluster: cluster,
			Pipeline: p.pipeline(), Store: p.st, Horizon: p.horizon, Lag: p.lag, Registerer: p.reg, Logger: p.log.With("source", "eventhubs")}
		if e.ConnectionStringFile != "" {
			b, err := os.ReadFile(e.ConnectionStringFile)
			if err != nil {
				return nil, fmt.Errorf("event hubs connection string: %w", err)
			}
			o.ConnectionString = strings.TrimSpace(string(b))
		}
		if e.TLS {
			o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
			if e.CAFile != "" {
				pem, err := os.ReadFile(e.CAFile)
				if err != nil {
					return nil, fmt.Errorf("event hubs CA: %w", err)
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("event hubs CA %s holds no certificate", e.CAFile)
				}
				o.TLS.RootCAs = pool
			}
		}
		cons, err := eventhubs.New(o)
		if err != nil {
			return nil, err
		}
		p.log.Info("consuming the audit log of an AKS cluster from Event Hubs", "event_hub", e.Name, "consumer_group", e.Group, "cluster", cluster)
		return background("event hubs", func(ctx context.Context) {
			if err := cons.Run(ctx); err != nil {
				p.log.Error("the Event Hubs consumer stopped", "err", err)
			}
		}).start(ctx)
	}}
}
