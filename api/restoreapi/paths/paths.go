// Package paths is the URL scheme of the direct door (package restoreapi):
// its prefix and the paths of a cluster's record, a version and a restore
// plan. The door routes them, and the services (history, restore) write
// them into their documents as links, so the scheme is one small package
// of the door's that both import. It does no I/O.
package paths

import (
	"encoding/hex"
	"net/url"
)

// APIPrefix is the path prefix of the direct API's routes.
const APIPrefix = "/api/v1"

// ClusterPath is the direct API's path of a cluster's record, under which
// the links of the documents point.
func ClusterPath(cluster string) string {
	return APIPrefix + "/clusters/" + url.PathEscape(cluster)
}

// VersionPath is the path of a version; hexKey is its key in hex, as
// the API writes it.
func VersionPath(cluster, uid, hexKey string) string {
	return ClusterPath(cluster) + "/objects/" + url.PathEscape(uid) + "/versions/" + hexKey
}

// PlanExecutePath is where a restore plan is executed.
func PlanExecutePath(cluster, id string) string {
	return ClusterPath(cluster) + "/restore-plans/" + id + "/execute"
}

// Links are the API paths of what can be done with a version.
type Links struct {
	Self     string `json:"self"`
	History  string `json:"history"`
	Diff     string `json:"diff" doc:"the diff against the state before this change"`
	Manifest string `json:"manifest"`
	Restore  string `json:"restore" doc:"POST here to restore the state this version holds"`
}

// LinksFor are the links of the version key of the object uid.
func LinksFor(cluster, uid string, key []byte) Links {
	self := VersionPath(cluster, uid, hex.EncodeToString(key))
	return Links{
		Self:     self,
		History:  ClusterPath(cluster) + "/objects/" + url.PathEscape(uid) + "/history",
		Diff:     self + "/diff",
		Manifest: self + "/manifest",
		Restore:  self + "/restore",
	}
}
