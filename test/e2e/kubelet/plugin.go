// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Plugin is a registered DRA driver's gRPC service, as returned by
// [Kubelet.Discover]. It is safe for concurrent use.
type Plugin struct {
	name               string
	endpoint           string
	registrationSocket string
	versions           []string
	conn               *grpc.ClientConn
	client             drapbv1.DRAPluginClient
}

// ClaimRef identifies a ResourceClaim the way the kubelet sends it to a
// driver. The UID need not belong to any claim the API server knows.
type ClaimRef struct {
	Namespace, Name string
	UID             types.UID
}

// Ref returns the reference the kubelet would send for claim.
func Ref(claim *resourceapi.ResourceClaim) ClaimRef {
	return ClaimRef{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
}

// Name returns the driver name the plugin registered with.
func (p *Plugin) Name() string { return p.name }

// Endpoint returns the path of the DRA gRPC socket.
func (p *Plugin) Endpoint() string { return p.endpoint }

// RegistrationSocket returns the path of the registration socket the
// plugin was discovered through.
func (p *Plugin) RegistrationSocket() string { return p.registrationSocket }

// SupportedVersions returns the services the plugin listed in its
// PluginInfo, such as "v1.DRAPlugin".
func (p *Plugin) SupportedVersions() []string { return slices.Clone(p.versions) }

// Prepare calls NodePrepareResources for the claims, as the kubelet does
// before starting a pod that uses them.
//
// The error is non-nil for a failed call, and for a response that leaves
// out one of the claims (the kubelet treats that as a failure too); the
// response is returned whenever there is one. A claim the driver could not
// prepare is not an error here: it is the Error field of that claim's entry
// in the response, for the test to inspect.
func (p *Plugin) Prepare(ctx context.Context, claims ...*resourceapi.ResourceClaim) (*drapbv1.NodePrepareResourcesResponse, error) {
	return p.PrepareRefs(ctx, refs(claims)...)
}

// Unprepare calls NodeUnprepareResources for the claims, as the kubelet
// does after the last pod using them has stopped. Errors follow Prepare.
func (p *Plugin) Unprepare(ctx context.Context, claims ...*resourceapi.ResourceClaim) (*drapbv1.NodeUnprepareResourcesResponse, error) {
	return p.UnprepareRefs(ctx, refs(claims)...)
}

// PrepareRefs is Prepare for claims given by reference.
func (p *Plugin) PrepareRefs(ctx context.Context, claims ...ClaimRef) (*drapbv1.NodePrepareResourcesResponse, error) {
	resp, err := p.client.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: protoClaims(claims)})
	if err != nil {
		return nil, fmt.Errorf("kubelet: NodePrepareResources on %s: %w", p.name, err)
	}
	return resp, missing("NodePrepareResources", p.name, claims, func(uid string) bool { _, ok := resp.Claims[uid]; return ok })
}

// UnprepareRefs is Unprepare for claims given by reference.
func (p *Plugin) UnprepareRefs(ctx context.Context, claims ...ClaimRef) (*drapbv1.NodeUnprepareResourcesResponse, error) {
	resp, err := p.client.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: protoClaims(claims)})
	if err != nil {
		return nil, fmt.Errorf("kubelet: NodeUnprepareResources on %s: %w", p.name, err)
	}
	return resp, missing("NodeUnprepareResources", p.name, claims, func(uid string) bool { _, ok := resp.Claims[uid]; return ok })
}

// Close closes the connection to the plugin's DRA socket.
func (p *Plugin) Close() error { return p.conn.Close() }

func refs(claims []*resourceapi.ResourceClaim) []ClaimRef {
	out := make([]ClaimRef, len(claims))
	for i, c := range claims {
		out[i] = Ref(c)
	}
	return out
}

func protoClaims(claims []ClaimRef) []*drapbv1.Claim {
	out := make([]*drapbv1.Claim, len(claims))
	for i, c := range claims {
		out[i] = &drapbv1.Claim{Namespace: c.Namespace, Uid: string(c.UID), Name: c.Name}
	}
	return out
}

// missing reports claims the response has no entry for.
func missing(method, driver string, claims []ClaimRef, has func(uid string) bool) error {
	var left []string
	for _, c := range claims {
		if !has(string(c.UID)) {
			left = append(left, c.Namespace+"/"+c.Name+" ("+string(c.UID)+")")
		}
	}
	if len(left) == 0 {
		return nil
	}
	return fmt.Errorf("kubelet: %s on %s left out %d claim(s): %v", method, driver, len(left), left)
}

// WatchHealth opens the driver's device health stream
// (DRAResourceHealth v1, KEP-4680), as the kubelet does for a plugin that
// offers it: each Recv returns one report, the health of the driver's
// devices by pool and name, with a message and a lease. The stream ends
// with ctx.
func (p *Plugin) WatchHealth(ctx context.Context) (drahealthv1.DRAResourceHealth_NodeWatchResourcesClient, error) {
	return drahealthv1.NewDRAResourceHealthClient(p.conn).NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
}
