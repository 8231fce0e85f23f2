// SPDX-License-Identifier: Apache-2.0

// Package modes holds four modes of the audio-operator binary (deploy/audio/operator.yaml):
// the first processes of the two native sidecars, which run PipeWire and
// WirePlumber as their children, and the two probes those sidecars name.
//
//	audio-operator pipewire                           PipeWire (restarts.go)
//	audio-operator wireplumber --profile=main-embedded WirePlumber (restarts.go)
//	audio-operator graph-answers                      PipeWire's startup probe (graphprobe.go)
//	audio-operator endpoints-registered               WirePlumber's probes (endpoints.go)
//
// Each mode is a Func, listed in ByName: args are the command line after
// the mode's name, Env is what the mode takes from its process, and the
// int is the process's exit status. The image holds no shell, so the
// probes are modes of the one binary rather than scripts.
package modes
