// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audio/gate"
)

// runtimeDir is where PipeWire's socket and the claim files are.
func (c Config) runtimeDir() string {
	if c.Remote.RuntimeDir != "" {
		return c.Remote.RuntimeDir
	}
	return RuntimeDir
}

// syncClaimFiles keeps one claim file for each claim in the driver's
// checkpoint and none for any other, so the claim gate serves exactly the
// prepared claims: an unprepared claim's socket is closed by the pass its
// unprepare wakes, a claim whose file a reboot wiped (the runtime
// directory is a tmpfs) while the kubelet still holds it prepared gets it
// back, and a restarted operator drops the files of claims unprepared
// while it was away. A claim whose nodes are not known this pass keeps
// its file as it is. It returns the claim files of the prepared claims,
// by UID, as they are once it is done; nil when the directory cannot be
// read.
func (o *operator) syncClaimFiles(ctx context.Context) map[string]gate.Claim {
	logger := klog.FromContext(ctx)
	dir := o.cfg.runtimeDir()
	held := o.driver.Claims()
	files, errs := gate.Claims(dir)
	for _, err := range errs {
		o.claimProblem(logger, err)
	}
	if files == nil {
		return nil // the directory could not be read
	}
	for uid := range files {
		if _, ok := held[types.UID(uid)]; !ok {
			if err := gate.RemoveClaim(dir, uid); err != nil {
				o.claimProblem(logger, err)
				continue
			}
			delete(files, uid)
			logger.V(2).Info("Claim socket withdrawn", "uid", uid)
		}
	}
	o.mu.Lock()
	known, speakerEPs := o.known, o.speakerEPs
	o.mu.Unlock()
	for uid, c := range held {
		if !c.Completed {
			continue // its prepare writes the file
		}
		var nodes []string
		for _, dev := range c.Devices {
			if e, ok := known[dev]; ok && !slices.Contains(nodes, e.NodeName) {
				nodes = append(nodes, e.NodeName)
			}
			// A speaker with no node now keeps its claim's file as it is.
			if s, ok := speakerEPs[dev]; ok && s.NodeName() != "" && !slices.Contains(nodes, s.NodeName()) {
				nodes = append(nodes, s.NodeName())
			}
		}
		if len(nodes) == 0 {
			continue
		}
		// A file there keeps what prepare wrote beside the nodes: the
		// claim's streams, volume and role, and its combined sink, whose
		// node stays named.
		want := gate.Claim{UID: string(uid), Nodes: nodes}
		f, ok := files[string(uid)]
		if ok {
			want.Streams, want.Combine, want.Volume, want.Role = f.Streams, f.Combine, f.Volume, f.Role
			// Passthrough to a node the claim still holds is kept.
			for node, codecs := range f.Passthrough {
				if slices.Contains(nodes, node) {
					if want.Passthrough == nil {
						want.Passthrough = map[string][]string{}
					}
					want.Passthrough[node] = codecs
				}
			}
			if f.Combine != nil {
				want.Nodes = append(want.Nodes, gate.CombinedNodeName(string(uid)))
			}
		}
		if ok && slices.Equal(f.Nodes, want.Nodes) {
			continue
		}
		if err := gate.WriteClaim(dir, want); err != nil {
			o.claimProblem(logger, err)
			continue
		}
		files[string(uid)] = want
		logger.Info("Claim socket requested again", "claim", c.Namespace+"/"+c.Name, "uid", uid, "nodes", nodes)
	}
	return files
}

func (o *operator) claimProblem(logger klog.Logger, err error) {
	if o.claimErr == err.Error() {
		return
	}
	o.claimErr = err.Error()
	logger.Error(err, "Keeping the claim files in step")
}
