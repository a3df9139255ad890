// Command kind-credentials writes kind-config/credentials/ for `make kind-up`
// (see package kindcreds): the sink's CA, serving certificate and webhook
// token, and the kube-apiserver's webhook kubeconfig. Existing credentials
// are kept unless -force is given.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/options-record/options-record/test/shipcheck/kindcreds"
)

func main() {
	dir := flag.String("dir", "kind-config/credentials", "directory to write the credentials into")
	template := flag.String("template", "deploy/audit/webhook-kubeconfig.template.yaml", "webhook kubeconfig template")
	force := flag.Bool("force", false, "replace existing credentials (recreate the kind cluster afterwards)")
	flag.Parse()
	tmpl, err := os.ReadFile(*template)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind-credentials:", err)
		os.Exit(1)
	}
	wrote, err := kindcreds.Ensure(*dir, tmpl, *force)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kind-credentials:", err)
		os.Exit(1)
	}
	if wrote {
		fmt.Printf("kind-credentials: wrote %s (webhook %s)\n", *dir, kindcreds.WebhookURL)
	} else {
		fmt.Printf("kind-credentials: %s is up to date (-force replaces it)\n", *dir)
	}
}
