// Package ui is the timeline page of kubectl record ui: a web server on
// loopback that answers only its own page, with the caller's kubeconfig
// credentials, through the record API's typed client. Nothing new runs in
// the cluster.
//
// Security: the server listens on loopback only, on a random port; the
// URL it prints carries a one-time token, exchanged at the first visit for
// a session cookie (HttpOnly, SameSite=Strict) so that no other local user
// or page can use it; every request must name the server's own host (no
// DNS rebinding), and every write must come from the page itself (its
// Origin, and a header a cross-site form cannot send). The page is static
// (assets embedded, no inline script, a strict Content-Security-Policy)
// and shows every recorded string as text, never as markup.
package ui
