// SPDX-License-Identifier: Apache-2.0

// Package audiocli is kubectl-liken-audio, the kubectl plugin that lists
// the cluster's Sinks and Sources and captures what one plays or hears
// through audio-api (deploy/audio/api.yaml), with the caller's own
// credentials and RBAC.
package audiocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liken-sh/operators/internal/safetext"
)

// DefaultNamespace is where deploy/audio puts the operator and audio-api.
const DefaultNamespace = "liken-system"

// Options is the plugin's state shared by its commands.
type Options struct {
	genericiooptions.IOStreams
	// Kube are kubectl's standard connection flags (--kubeconfig,
	// --context, --server, --token, ...), from k8s.io/cli-runtime.
	Kube *genericclioptions.ConfigFlags
	// Namespace is where the operator and audio-api run (-n).
	Namespace string
	// Force silences the version drift warning.
	Force bool
	// APIAddress, if set, is a host:port at which audio-api is dialled
	// directly instead of through a port-forward to its pod: for a
	// control plane with no kubelet to port-forward through (the demo,
	// tests), or an audio-api a person exposed themselves. The server's
	// certificate is still verified against ConfigMap audio-api-ca.
	APIAddress string
	// Version is the plugin's own release.
	Version string

	// warnings wait for flushWarnings: after the command's error, or
	// once a capture is under way.
	warnings []string
}

// warnLater holds one warning line for flushWarnings.
func (o *Options) warnLater(format string, args ...any) {
	o.warnings = append(o.warnings, fmt.Sprintf(format, args...))
}

// flushWarnings writes the held warnings to stderr, once each.
func (o *Options) flushWarnings() {
	for _, w := range o.warnings {
		warnf(o.ErrOut, "%s", w)
	}
	o.warnings = nil
}

// NewCommand returns the root command, `kubectl liken audio`, whose
// subcommands are capture, list and completion. version is the plugin's
// release (set at build time); streams are where it reads and writes.
func NewCommand(version string, streams genericiooptions.IOStreams) *cobra.Command {
	root, _ := newCommand(version, streams)
	return root
}

func newCommand(version string, streams genericiooptions.IOStreams) (*cobra.Command, *Options) {
	o := &Options{IOStreams: streams, Version: version, Kube: genericclioptions.NewConfigFlags(true)}
	// -n names the operator's namespace, not the context's: Sinks and
	// Sources have none, and the context's default is rarely the
	// operator's.
	o.Kube.Namespace = nil
	root := &cobra.Command{
		Use: "kubectl-liken-audio",
		// Usage and help read "kubectl liken audio ...", as kubectl runs
		// the plugin.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl liken audio"},
		Short:         "Hear what a Sink plays or a Source hears, through audio-api",
		Long:          "Lists the cluster's Sinks and Sources and captures what one plays (a Sink's monitor) or hears (a Source) as WAV, FLAC or Opus, through audio-api with your own credentials.",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			DisableDefaultCmd: true,
		},
	}
	root.SetVersionTemplate("kubectl-liken-audio {{.Version}}\n")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	pf := root.PersistentFlags()
	o.Kube.AddFlags(pf)
	pf.StringVarP(&o.Namespace, "namespace", "n", DefaultNamespace, "the namespace of the audio operator and audio-api")
	pf.BoolVar(&o.Force, "force", false, "do not warn when the operator's version differs from this plugin's")
	pf.StringVar(&o.APIAddress, "api-address", "", "dial audio-api at host:port instead of port-forwarding to its pod (its certificate is still verified)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if f := cmd.Flag("api-address"); f != nil && f.Changed && o.APIAddress == "" {
			return errors.New(`--api-address "": the address is empty; leave it out to reach audio-api through a port-forward to its pod, or give host:port`)
		}
		return checkAPIAddress(o.APIAddress)
	}
	root.AddCommand(newCaptureCommand(o), newListCommand(o), newCompletionCommand(root))
	return root, o
}

// checkAPIAddress refuses, before anything is dialled, an --api-address
// that is not host:port: the plugin puts "https://" in front of it and
// the API's paths after it, so a scheme, a path or a missing port would
// otherwise dial a host named "https", a path audio-api does not serve,
// or port 443.
func checkAPIAddress(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || port == "" || strings.ContainsAny(addr, "/?#@")) {
		err = errors.New("give a host and a port, nothing else")
	}
	if err == nil {
		if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 {
			err = errors.New("the port is not a number from 1 to 65535")
		}
	}
	if err != nil {
		return fmt.Errorf("--api-address %s is not host:port (e.g. 127.0.0.1:8443 or audio-api.example.com:443): %v", safetext.Quote(addr), err)
	}
	return nil
}

// Execute runs the root command with args and returns the process's exit
// status, printing any error as "error: ..." on stderr, and after it any
// warning the command held (a version drift).
func Execute(ctx context.Context, version string, streams genericiooptions.IOStreams, args []string) int {
	cmd, o := newCommand(version, streams)
	cmd.SetArgs(args)
	defer o.flushWarnings()
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		return 1
	}
	return 0
}

func newCompletionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:       "completion bash|zsh|fish|powershell",
		Short:     "Print the shell completion script (names of Sinks and Sources complete too)",
		Long:      "Prints the completion script for bash, zsh, fish or PowerShell. As a kubectl plugin, install it for kubectl-liken-audio, e.g.\n  kubectl-liken-audio completion bash > /etc/bash_completion.d/kubectl-liken-audio",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return fmt.Errorf("no completion for shell %s; use bash, zsh, fish or powershell", safetext.Quote(args[0]))
		},
	}
}

// warnf writes one warning line to w.
func warnf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "warning: "+format+"\n", args...)
}
