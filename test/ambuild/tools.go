//go:build tools

// Package ambuild pins the Alertmanager the notification tests run: its
// binary is built from this module by build.sh, never from the product's
// go.mod.
package ambuild

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
