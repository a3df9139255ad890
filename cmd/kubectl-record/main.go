// Command kubectl-record is the kubectl plugin of Options Record: `kubectl
// record deletions`, `history`, `manifest`, `restore`. It only wires the
// process to package app.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/cmd/kubectl-record/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
