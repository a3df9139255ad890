package app

import (
	"errors"
	"fmt"

	"github.com/options-record/options-record/auditsink/notify"
)

// Validate refuses the combinations of options that cannot run, without
// any I/O: the command's options call it to answer a usage error before
// anything starts, and Serve calls it first for callers that build
// ServeOptions themselves. Each check is written here once.
func (o *ServeOptions) Validate() error {
	ingest, _, err := o.roles()
	if err != nil {
		return err
	}
	if err := o.Database.validate(); err != nil {
		return err
	}
	if o.Notify.Lease != 0 && o.Notify.Lease < notify.MinLease {
		return fmt.Errorf("--notify-lease %s is shorter than %s: a message still being sent would be sent again by another replica", o.Notify.Lease, notify.MinLease)
	}
	if err := o.validateAPI(); err != nil {
		return err
	}
	if err := o.GKE.validate(ingest); err != nil {
		return err
	}
	if !ingest && (o.Firehose != nil || o.EventHubs != nil) {
		return errors.New("--firehose-* and --eventhubs-* need the role ingest (--roles)")
	}
	if ingest {
		if err := o.validateManaged(); err != nil {
			return err
		}
		return o.validateWebhookClients()
	}
	return nil
}

// roles says which roles o runs, and refuses options of a role it does not.
func (o *ServeOptions) roles() (ingest, api bool, err error) {
	if (o.CheckpointDir != "" || o.CheckpointURL != "") && o.LogSigningKeyFile == "" {
		return false, false, errors.New("--checkpoint-dir or --checkpoint-url needs --log-signing-key-file")
	}
	if o.CheckpointDir != "" && o.CheckpointURL != "" {
		return false, false, errors.New("--checkpoint-dir and --checkpoint-url name the same thing: give one")
	}
	if o.VerifyInterval < 0 || (o.VerifyInterval > 0 && o.LogSigningKeyFile == "") {
		return false, false, errors.New("--verify-interval needs --log-signing-key-file, and is not negative")
	}
	if _, err := o.witnesses(); err != nil {
		return false, false, err
	}
	if o.Notify.Lease != 0 && o.Notify.Lease != DefaultNotifyLease && o.Notify.ConfigFile == "" {
		return false, false, errors.New("--notify-lease without --notify-config: only an ingest replica sending notifications holds their leases")
	}
	if len(o.Roles) == 0 {
		return true, o.API != nil && o.API.Addr != "", nil
	}
	for _, r := range o.Roles {
		switch r {
		case RoleIngest:
			ingest = true
		case RoleAPI:
			api = true
		default:
			return false, false, fmt.Errorf("--roles: unknown role %q: want ingest, api or both, comma-separated", r)
		}
	}
	switch {
	case api && (o.API == nil || o.API.Addr == ""):
		return false, false, errors.New("--roles=api needs --api-bind-address")
	case !api && o.API != nil && o.API.Addr != "":
		return false, false, errors.New("--api-bind-address without the role api (--roles)")
	case !ingest && o.JournalDir != "":
		return false, false, errors.New("--journal-dir without the role ingest (--roles): only ingest takes batches")
	case !ingest && o.Notify.ConfigFile != "":
		return false, false, errors.New("--notify-config without the role ingest (--roles): only ingest sends notifications")
	case !ingest && o.LogSigningKeyFile != "":
		return false, false, errors.New("--log-signing-key-file without the role ingest (--roles): only ingest keeps the tamper-evident log")
	case !ingest && o.Admission.Addr != "":
		return false, false, errors.New("--admission-addr without the role ingest (--roles): only ingest serves the observing webhook")
	case !ingest && o.Kube != nil && o.Kube.Sync.WebhookConfigName != "":
		return false, false, errors.New("--admission-webhook-config-name without the role ingest (--roles): only ingest keeps the observing webhook's configuration")
	}
	return ingest, api, nil
}

// validate refuses an API login without the reader's: the embedded
// PostgreSQL has one role.
func (o DatabaseOptions) validate() error {
	if o.URL == "" && o.APIURL != "" {
		return errors.New("--api-database-url needs --database-url (the record's reader): the embedded PostgreSQL has one role")
	}
	return nil
}

// validateAPI refuses the API options that need a cluster, or no cluster.
func (o *ServeOptions) validateAPI() error {
	if o.API == nil {
		return nil
	}
	cluster := o.Kube != nil
	switch {
	case o.API.TokenFile != "" && cluster:
		return errors.New("--api-token-file is for the standalone mode (no cluster): with a cluster, callers present Kubernetes tokens")
	case o.API.Aggregated != nil && !cluster:
		return errors.New("--aggregated-bind-address needs a cluster (--kubeconfig or --in-cluster)")
	case o.API.RecordAddr != "" && !cluster:
		return errors.New("--record-bind-address needs a cluster (--kubeconfig or --in-cluster)")
	}
	return nil
}

// validateWebhookClients refuses a client CA that would take any
// certificate it verifies for the apiserver unless that is said, and the
// contradictions of --webhook-allow-any-client-cert.
func (o *ServeOptions) validateWebhookClients() error {
	switch {
	case o.AllowAnyClientCert && o.ClientCAFile == "":
		return errors.New("--webhook-allow-any-client-cert needs --webhook-client-ca")
	case o.AllowAnyClientCert && (len(o.ClientCNs) > 0 || o.ClientsFile != ""):
		return errors.New("--webhook-allow-any-client-cert contradicts the names of --webhook-client-cn or --webhook-clients-file: use one or the other")
	case !o.AllowAnyClientCert && o.ClientCAFile != "" && o.ClientsFile == "" && len(o.ClientCNs) == 0:
		// Fail closed: the cluster CA verifies every kubelet's certificate
		// too, and any of them could write history.
		return errors.New("--webhook-client-ca without a name allow-list would take any certificate the CA verifies (with the cluster CA, every kubelet's) for the apiserver: " +
			"list the apiservers' certificate names with --webhook-client-cn (or --webhook-clients-file), or set --webhook-allow-any-client-cert if the CA issues only apiserver client certificates")
	}
	return nil
}
