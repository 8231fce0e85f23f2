// SPDX-License-Identifier: Apache-2.0

package dra

import "k8s.io/apimachinery/pkg/types"

// ClaimRef names a ResourceClaim.
type ClaimRef struct {
	Namespace, Name string
}

// Holders maps each device name of this driver that a prepared claim
// holds to that claim (a device shared by several claims maps to the one
// whose UID sorts first, so the answer is stable). Claims whose prepare
// started but did not complete are left out. It reads the checkpoint as
// this process last saw it; it never touches the file, so it is cheap
// enough for every reconcile pass.
func (d *Driver) Holders() map[string]ClaimRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]ClaimRef{}
	first := map[string]types.UID{}
	for uid, rec := range d.cp.body.Claims {
		if rec.Phase != phaseCompleted {
			continue
		}
		for _, dev := range rec.Devices {
			if prev, ok := first[dev.Device]; ok && prev < uid {
				continue
			}
			first[dev.Device] = uid
			out[dev.Device] = ClaimRef{Namespace: rec.Namespace, Name: rec.Name}
		}
	}
	return out
}

// claimsChanged tells the status writer and the operator
// (Options.OnClaimsChanged) that the set of prepared claims changed.
func (d *Driver) claimsChanged() {
	d.status.poke()
	if d.opts.OnClaimsChanged != nil {
		d.opts.OnClaimsChanged()
	}
}

// PreparedClaim is one claim in the driver's checkpoint.
type PreparedClaim struct {
	ClaimRef
	// Devices are the names of its devices of this driver; empty while
	// its prepare has not completed.
	Devices []string
	// Completed is false while its prepare runs (or after one that was
	// cut short and is not yet cleaned up).
	Completed bool
}

// Claims returns every claim in the checkpoint by UID, prepared or being
// prepared, so an operator that keeps state per claim (a file, a socket)
// can keep exactly these and drop the rest. Like Holders it reads memory
// only.
func (d *Driver) Claims() map[types.UID]PreparedClaim {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]PreparedClaim, len(d.cp.body.Claims))
	for uid, rec := range d.cp.body.Claims {
		c := PreparedClaim{ClaimRef: ClaimRef{Namespace: rec.Namespace, Name: rec.Name}, Completed: rec.Phase == phaseCompleted}
		for _, dev := range rec.Devices {
			c.Devices = append(c.Devices, dev.Device)
		}
		out[uid] = c
	}
	return out
}
