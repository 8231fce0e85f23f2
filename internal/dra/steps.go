// SPDX-License-Identifier: Apache-2.0

package dra

// The durable steps of prepare and unprepare, in the order they happen.
// A process may die between any two of them (the kubelet restarts a
// crashed plugin and repeats the call it got no answer for), so each step
// leaves the checkpoint and the CDI directory in a state from which the
// repeated call, or the startup repair, reaches the same end as an
// uninterrupted call.
const (
	stepPrepareRecordedStarted   = "prepare/recorded-started"   // checkpoint holds the claim as started
	stepPrepareDevicePrepared    = "prepare/device-prepared"    // the operator prepared one device
	stepPrepareSpecWritten       = "prepare/spec-written"       // the claim's CDI spec is on disk and synced
	stepPrepareRecordedCompleted = "prepare/recorded-completed" // checkpoint holds the claim as completed; the answer is next
	stepUnprepareSpecRemoved     = "unprepare/spec-removed"     // the CDI spec is gone
	stepUnprepareRecordRemoved   = "unprepare/record-removed"   // the checkpoint no longer holds the claim; the answer is next
	stepCheckpointTempSynced     = "checkpoint/temp-synced"     // the next checkpoint is synced under a temporary name
	stepCheckpointRenamed        = "checkpoint/renamed"         // the next checkpoint replaced the old one; the directory is not synced yet
)

// stepHook, when set, is called as each step above is reached. It is nil
// in every build of the product: only this package's crash-consistency
// test sets it, to kill its process at a chosen step and prove that the
// repeated call ends as if nothing had happened.
var stepHook func(step string)

// reached reports a durable step to stepHook.
func reached(step string) {
	if stepHook != nil {
		stepHook(step)
	}
}
