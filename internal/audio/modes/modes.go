// SPDX-License-Identifier: Apache-2.0

package modes

import "context"

// Func is the shape of every mode: args are the command line after the
// mode's name, env is what the mode takes from its process (ProcessEnv()
// in the binary), and the result is the exit status. A Func returns when
// it is done; ctx ending asks a supervising mode to stop its child (as
// SIGTERM would) and cuts a probe short.
type Func func(ctx context.Context, args []string, env Env) int

// ByName maps deploy/audio/operator.yaml's mode names, the first argument of
// audio-operator, to their Funcs.
var ByName = map[string]Func{
	"pipewire":             PipeWire,
	"wireplumber":          WirePlumber,
	"graph-answers":        GraphAnswers,
	"endpoints-registered": EndpointsRegistered,
}
