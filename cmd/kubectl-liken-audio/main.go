// SPDX-License-Identifier: Apache-2.0

// Command kubectl-liken-audio is the audio operator's kubectl plugin:
//
//	kubectl liken audio list
//	kubectl liken audio capture NAME [--format wav|flac|opus] [--source] [-t begin,end] [--bitrate N] [-o FILE]
//	kubectl liken audio completion bash|zsh|fish
//	kubectl liken audio --version
//
// kubectl runs it as `kubectl liken-audio ...` directly, and liken's
// plugin dispatcher as `kubectl liken audio ...`. It reaches audio-api
// through a port-forward with the kubeconfig's own credentials
// (--kubeconfig, --context and kubectl's other connection flags).
package main

import (
	"context"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liken-sh/operators/internal/audiocli"
)

// version is the release, set at build time with -ldflags "-X main.version=...";
// the operator's image tag of the same release matches it.
var version = "dev"

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(audiocli.Execute(context.Background(), version, streams, os.Args[1:]))
}
