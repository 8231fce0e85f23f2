// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	"github.com/liken-sh/operators/internal/kubeclient"
)

// Execute runs the plugin with args and returns the exit status: 0 on
// success, 1 with the error on streams.ErrOut otherwise.
func Execute(ctx context.Context, version string, streams genericiooptions.IOStreams, args []string) int {
	cmd := NewCommand(version, streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(streams.ErrOut, "error:", err)
		return 1
	}
	return 0
}

// NewCommand is the root command, with kubectl's connection flags.
func NewCommand(version string, streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use: "kubectl-liken-bluetooth",
		// Usage and help read "kubectl liken bluetooth ...", as kubectl
		// runs the plugin.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl liken bluetooth"},
		Short:         "Pair, list and unpair Bluetooth devices of the bluetooth.liken.sh operator",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("kubectl-liken-bluetooth {{.Version}}\n")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	env := &env{flags: flags, streams: streams}
	root.AddCommand(newPair(env), newList(env), newUnpair(env))
	root.AddCommand(&cobra.Command{
		Use:       "completion bash|zsh|fish|powershell",
		Short:     "Print a shell completion script",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
			return fmt.Errorf("no completion for shell %s; use bash, zsh, fish or powershell", quote(args[0]))
		},
	})
	return root
}

// env is what every subcommand shares.
type env struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// dyn, when set, is the client instead of the one the flags name
	// (tests).
	dyn dynamic.Interface
}

// client returns a dynamic client and the namespace the flags and the
// kubeconfig name.
func (e *env) client() (dynamic.Interface, string, error) {
	if e.dyn != nil {
		return e.dyn, "default", nil
	}
	if err := kubeclient.CheckKubeconfigFiles(e.flags.ToRawKubeConfigLoader().ConfigAccess()); err != nil {
		return nil, "", err
	}
	rc, err := e.flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := e.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return d, ns, nil
}
