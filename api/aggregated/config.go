package aggregated

import (
	"cmp"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/component-base/compatibility"
	"k8s.io/kube-openapi/pkg/common"

	generatedopenapi "github.com/options-record/options-record/api/aggregated/openapi"
	"github.com/options-record/options-record/api/aggregated/registry/record"
	"github.com/options-record/options-record/api/aggregated/registry/restores"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/version"
)

// genericConfig is the generic server's configuration without serving,
// authentication, authorization and OpenAPI: bounded work, and nothing
// that watches.
func genericConfig(opts Options) *genericapiserver.Config {
	cfg := genericapiserver.NewConfig(Codecs)
	// Emulation and compatibility versions of the generic server's own
	// machinery (which APIs and features of k8s.io/apiserver 1.36 it has);
	// /version reports this build's release instead (api/version).
	cfg.EffectiveVersion = reportedVersion{compatibility.NewEffectiveVersionFromString("1.36", "", ""), version.Get().Kubernetes()}
	// NewConfig leaves FlowControl nil (the max-in-flight filter is used
	// instead of priority-and-fairness, which needs FlowSchema informers),
	// AdmissionControl nil (no admission plugins, hence no informers for
	// them) and RESTOptionsGetter nil (no etcd).
	cfg.EnableProfiling = false
	// Counts objects in etcd for priority-and-fairness' work estimates;
	// with neither, its post-start hook would only run an idle goroutine.
	cfg.StorageObjectCountTracker = nil
	// Bounded work, as the direct API: few requests at once in all and per
	// caller, each with a deadline.
	cfg.MaxRequestsInFlight = cmp.Or(opts.MaxInFlight, history.DefaultMaxInFlight)
	cfg.MaxMutatingRequestsInFlight = max(cfg.MaxRequestsInFlight/2, 1)
	cfg.RequestTimeout = cmp.Or(opts.RequestTimeout, time.Minute)
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		inner := perCaller(withNewestEvents(h, opts.History, opts.Cluster, opts.Logger), opts.Callers)
		chain := refuseImpersonation(genericapiserver.DefaultBuildHandlerChain(inner, c))
		if opts.direct() {
			// Outside the whole chain: a refused request costs nothing.
			chain = opts.AuthLimit.Handler(chain, refuseUnauthenticated)
		}
		return chain
	}
	for _, h := range opts.DisabledPostStartHooks {
		cfg.DisabledPostStartHooks.Insert(h)
	}
	return cfg
}

// secureServing serves HTTPS on the options' listener with their
// certificate.
func secureServing(opts Options) *genericoptions.SecureServingOptionsWithLoopback {
	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	serving.Listener = opts.Listener
	serving.ServerCert.CertKey.CertFile = opts.CertFile
	serving.ServerCert.CertKey.KeyFile = opts.KeyFile
	// The aggregator multiplexes many requests into one HTTP/2 connection;
	// a caller of the direct door is one client, and every stream it opens
	// is a request to authenticate.
	serving.HTTP2MaxStreamsPerConnection = 1000
	if opts.direct() {
		serving.HTTP2MaxStreamsPerConnection = DirectMaxStreamsPerConnection
	}
	return serving
}

// openAPIConfigs are the OpenAPI v2 and v3 documents' configurations, from
// the generated definitions, named after the served version only.
func openAPIConfigs() (*common.Config, *common.OpenAPIV3Config) {
	v2 := genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(namingScheme))
	v2.Info.Title = "Options Record"
	v3 := genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(namingScheme))
	v3.Info.Title = "Options Record"
	return v2, v3
}

// apiGroup is record.optionsrecord.io with the storage of each of its
// resources: the record's reads and the restores.
func apiGroup(opts Options) *genericapiserver.APIGroupInfo {
	group := genericapiserver.NewDefaultAPIGroupInfo(recordv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	storage := record.Storage(opts.Logger, opts.History, opts.Restore, opts.Cluster, opts.Proofs)
	for name, s := range restores.Storage(opts.Logger, opts.History, opts.Restore, opts.Cluster) {
		storage[name] = s
	}
	group.VersionedResourcesStorageMap[recordv1alpha1.SchemeGroupVersion.Version] = storage
	return &group
}

// reportedVersion is the generic server's effective version, whose Info,
// served at /version, is Options Record's release rather than the
// library's.
type reportedVersion struct {
	compatibility.EffectiveVersion
	info *apimachineryversion.Info
}

func (v reportedVersion) Info() *apimachineryversion.Info { return v.info }
