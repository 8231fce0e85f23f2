// SPDX-License-Identifier: Apache-2.0

// Package audio is the audio.liken.sh operator: which outputs the claimed
// cards have and what each is called (endpoints), what the operator
// publishes for them (devices: attributes and taints), what a consumer's
// container gets (prepare), and the loop that keeps them current.
package audio
