// Package manifest is kubectl record manifest: a recorded version as a
// clean manifest for kubectl apply -f -, checked to be exactly the one
// recorded object.
package manifest
