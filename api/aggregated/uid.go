package aggregated

import (
	"k8s.io/apimachinery/pkg/util/version"
)

// TrustRemoteUID reports whether a kube-apiserver of this version (its
// /version gitVersion) can be trusted with X-Remote-Uid: from 1.32 on the
// aggregator deletes a client-sent X-Remote-Uid before it sets its own (or
// none); before, it forwards the client's unchanged. An unparsable version
// is not trusted.
func TrustRemoteUID(gitVersion string) bool {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return false
	}
	return v.AtLeast(version.MajorMinor(1, 32))
}
