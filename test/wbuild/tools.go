//go:build tools

// Package wbuild pins the witness the tamper log's witness tests submit
// checkpoints to: litewitness from filippo.io/torchwood, built from this module by build.sh, never from the
// product's go.mod. (witnessctl needs a module the proxy does not serve: witnessconfig
// does its two inserts.)
package wbuild

import _ "filippo.io/torchwood/cmd/litewitness"
