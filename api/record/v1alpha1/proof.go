package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The proof subresource of changes and clusterchanges (GET
// changes/NAME/proof) answers a version's inclusion proof in its
// cluster's tamper-evident log: the text of a C2SP tlog-proof
// (c2sp.org/tlog-proof), of type ProofContentType, which options-record
// verify --proof checks offline.
const (
	ProofSubresource = "proof"
	ProofContentType = "text/plain; charset=utf-8"
	// ProofHeader is the first line of a proof.
	ProofHeader = "c2sp.org/tlog-proof@v1"
)

// The causes of a proof's not found (in its status' details) for a
// version the caller may read: a version the caller may not read has the
// not found of a missing one, without a cause.
const (
	// CauseNoLog: the record keeps no tamper-evident log of the cluster.
	CauseNoLog metav1.CauseType = "NoTamperEvidentLog"
	// CauseNotLogged: the version is not in the log yet (it is appended
	// within seconds of being stored).
	CauseNotLogged metav1.CauseType = "NotInTamperEvidentLog"
	// CauseBeforeLog: the version was stored before the record kept its
	// log: the log does not hold it and never will.
	CauseBeforeLog metav1.CauseType = "StoredBeforeTamperEvidentLog"
)
