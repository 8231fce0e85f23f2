// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"

	"google.golang.org/grpc"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// interceptor answers, before the helper sees a NodePrepareResources call,
// every claim this driver already prepared from the checkpoint, and passes
// only the others on (isolated as isolate does). The helper fetches
// each claim from the API server first, so without this a kubelet that
// repeats the call for a prepared claim (after its own restart, or a
// plugin re-registration) would fail while the API server is unreachable,
// although the answer is on this node's disk.
//
// It also sees the registration handshake, whose statuses it hands to
// watchRegistration.
func (d *Driver) interceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s, ok := req.(*registerapi.RegistrationStatus); ok {
		d.reg.observe(s)
		return handler(ctx, req)
	}
	if _, ok := req.(*registerapi.InfoRequest); ok {
		resp, err := handler(ctx, req)
		if info, ok := resp.(*registerapi.PluginInfo); ok && err == nil {
			d.reg.info(info.SupportedVersions)
		}
		return resp, err
	}
	r, ok := req.(*drapbv1.NodePrepareResourcesRequest)
	if !ok {
		return isolate(ctx, req, handler)
	}
	out := &drapbv1.NodePrepareResourcesResponse{Claims: map[string]*drapbv1.NodePrepareResourceResponse{}}
	var rest []*drapbv1.Claim
	for _, c := range r.Claims {
		if res, ok := d.preparedAnswer(ctx, c); ok {
			out.Claims[c.Uid] = res
			continue
		}
		rest = append(rest, c)
	}
	if len(rest) == len(r.Claims) {
		return isolate(ctx, req, handler)
	}
	if len(rest) > 0 {
		resp, err := isolate(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: rest}, handler)
		if err != nil {
			return nil, err
		}
		for uid, res := range resp.(*drapbv1.NodePrepareResourcesResponse).Claims {
			out.Claims[uid] = res
		}
	}
	return out, nil
}

// isolate runs a DRA v1 call through handler, the helper. The helper
// fetches every claim of a NodePrepareResources call before preparing any,
// and one claim it cannot fetch (deleted, replaced, unknown UID) fails the
// whole call. The kubelet batches all of a pod's claims in one call, so this
// retries a failed batch claim by claim and answers each failure in its own
// per-claim error, as the API allows, leaving the other claims prepared.
// The fast path, a batch that succeeds, costs nothing extra.
func isolate(ctx context.Context, req any, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil {
		return resp, nil
	}
	switch r := req.(type) {
	case *drapbv1.NodePrepareResourcesRequest:
		out := &drapbv1.NodePrepareResourcesResponse{Claims: map[string]*drapbv1.NodePrepareResourceResponse{}}
		for _, c := range r.Claims {
			one, err := handler(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: []*drapbv1.Claim{c}})
			if err != nil {
				out.Claims[c.Uid] = &drapbv1.NodePrepareResourceResponse{Error: err.Error()}
				continue
			}
			for uid, res := range one.(*drapbv1.NodePrepareResourcesResponse).Claims {
				out.Claims[uid] = res
			}
		}
		return out, nil
	case *drapbv1.NodeUnprepareResourcesRequest:
		out := &drapbv1.NodeUnprepareResourcesResponse{Claims: map[string]*drapbv1.NodeUnprepareResourceResponse{}}
		for _, c := range r.Claims {
			one, err := handler(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: []*drapbv1.Claim{c}})
			if err != nil {
				out.Claims[c.Uid] = &drapbv1.NodeUnprepareResourceResponse{Error: err.Error()}
				continue
			}
			for uid, res := range one.(*drapbv1.NodeUnprepareResourcesResponse).Claims {
				out.Claims[uid] = res
			}
		}
		return out, nil
	}
	return resp, err
}
