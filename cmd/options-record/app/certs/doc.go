// Package certs owns the TLS material of the sink's listeners: serving
// certificates reloaded from disk when they change (so cert-manager or a
// rotated Secret takes effect without a restart), client-CA pools, and the
// self-signed CA and serving certificate generated for a standalone set-up.
//
// It never weakens verification: a client CA, when configured, is enforced
// by the TLS layer.
package certs
