package pubsub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
)

// Path is where the push endpoint is served, on the webhook's server.
const Path = "/gke/pubsub"

// Options configure the push endpoint.
type Options struct {
	// Cluster is the name the events are recorded under.
	Cluster string
	// Verifier checks each push's token; required.
	Verifier   *Verifier
	Registerer Registerer
	Logger     *slog.Logger
}

// Delivery is the Pub/Sub push endpoint of GKE's audit log entries, an
// auditsink.Delivery: the webhook's handler serves it
// (auditsink.Handler.ServeDelivery) under the webhook's bounds (failed
// authentications per address, the body's size, rate and timeout, the
// pushes and bytes in flight, the write timeout, the events' window), runs
// the one LogEntry of a push through the pipeline, and answers 200 only
// once it is durable.
type Delivery struct {
	o       Options
	metrics *metrics
}

// New validates the options.
func New(o Options) (*Delivery, error) {
	if o.Verifier == nil || o.Cluster == "" {
		return nil, errors.New("pubsub: the push endpoint needs a verifier and a cluster")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Delivery{o: o, metrics: newMetrics(o.Registerer)}, nil
}

// pushRequest is the body of a push
// (https://cloud.google.com/pubsub/docs/push#receive_push): the message,
// its data base64 in JSON, and the subscription.
type pushRequest struct {
	Message struct {
		Data        []byte            `json:"data"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
		Attributes  map[string]string `json:"attributes"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// Name implements auditsink.Delivery.
func (d *Delivery) Name() string { return Source }

// Authenticate implements auditsink.Delivery: the push's OIDC token is
// verified (signature, issuer, audience, expiry, service account).
func (d *Delivery) Authenticate(r *http.Request) bool {
	email, err := d.o.Verifier.Verify(r.Context(), r)
	if err != nil {
		d.o.Logger.Warn("push refused: token not verified", "remote", r.RemoteAddr, "err", err)
		return false
	}
	d.o.Logger.Debug("push authenticated", "push_account", email)
	return true
}

// Check implements auditsink.Delivery: a POST of JSON, not compressed.
func (d *Delivery) Check(r *http.Request) (int, error) {
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, errors.New("method not allowed: Pub/Sub pushes with POST")
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content type %q: want application/json", ct)
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content encoding %q", ce)
	}
	return 0, nil
}

// Decode implements auditsink.Delivery: the push's message, converted into
// the event it holds, or none and the reason (acknowledged all the same).
func (d *Delivery) Decode(_ *http.Request, body []byte, now time.Time) ([]auditsink.DeliveryBatch, error) {
	var push pushRequest
	if err := json.Unmarshal(body, &push); err != nil {
		return nil, fmt.Errorf("not a Pub/Sub push: %w", err)
	}
	events, undecodable := d.convert(push.Message.Data, now)
	d.o.Logger.Debug("push decoded", "cluster", d.o.Cluster, "message_id", push.Message.MessageID,
		"subscription", push.Subscription, "events", len(events))
	return []auditsink.DeliveryBatch{{Cluster: d.o.Cluster, Events: events, Undecodable: undecodable}}, nil
}

// Answer implements auditsink.Delivery; Pub/Sub reads only the status (any
// but 102, 200, 201, 202 and 204 pushes the message again).
func (d *Delivery) Answer(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	d.metrics.pushes.WithLabelValues(outcome(status)).Inc()
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "{}")
		return
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="options-record"`)
		msg = "unauthenticated: present the push subscription's Google-signed OIDC token"
	}
	http.Error(w, msg, status)
}

// outcome names an answer in options_record_pubsub_pushes_total.
func outcome(status int) string {
	switch status {
	case http.StatusOK:
		return "stored"
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusTooManyRequests:
		return "throttled"
	case http.StatusRequestTimeout:
		return "slow_body"
	case http.StatusServiceUnavailable:
		return "store_failed"
	case http.StatusInternalServerError:
		return "error"
	}
	return "rejected"
}

// Reasons a message gives no event: it is acknowledged all the same (a
// push answered otherwise is pushed again, forever), and counted.
const (
	reasonNotKubernetes = "gke_not_kubernetes"
	reasonMalformed     = "gke_malformed"
)

// convert turns a message's data into the events it holds: one, or none
// and the reason. The converted event goes through the webhook's decoder
// (decode.EventList), so it is checked, and its strings made safe, as an
// event the apiserver posted would be.
func (d *Delivery) convert(data []byte, now time.Time) ([]auditv1.Event, map[string]int) {
	ev, err := Convert(data)
	if err != nil {
		reason := reasonMalformed
		if errors.Is(err, ErrNotKubernetes) {
			reason = reasonNotKubernetes
		}
		d.o.Logger.Warn("push message skipped", "cluster", d.o.Cluster, "reason", reason, "err", err)
		return nil, map[string]int{reason: 1}
	}
	list, err := json.Marshal(auditv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "EventList"},
		Items: []auditv1.Event{ev}})
	if err == nil {
		var events []auditv1.Event
		var undecodable map[string]int
		if events, undecodable, err = decode.EventList(list, now); err == nil {
			return events, undecodable
		}
	}
	d.o.Logger.Warn("push message skipped", "cluster", d.o.Cluster, "reason", reasonMalformed, "audit_id", ev.AuditID, "err", err)
	return nil, map[string]int{reasonMalformed: 1}
}
