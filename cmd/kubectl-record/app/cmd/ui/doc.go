// Package ui is kubectl record ui: it starts the timeline page (package
// cmd/kubectl-record/app/ui, imported as uiserver) on loopback, hands its
// one-time URL to the browser without putting the token on a command
// line, and answers the page's questions with the caller's credentials
// through the same requests as the other verbs (its backend).
package ui
