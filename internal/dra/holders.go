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

// claimsChanged tells the operator (Options.OnClaimsChanged) that the set
// of prepared claims changed.
func (d *Driver) claimsChanged() {
	if d.opts.OnClaimsChanged != nil {
		d.opts.OnClaimsChanged()
	}
}
