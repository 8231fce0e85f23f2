// SPDX-License-Identifier: Apache-2.0

package pipewire

import _ "embed"

// KeepLinksScript is the WirePlumber 0.5 Lua script the image bakes as
// /usr/share/wireplumber/scripts/liken/keep-links.lua, loaded as the
// component KeepLinksComponent of the main-embedded profile.
//
// Why: PipeWire's link factory ties a link to the client that created it
// unless the link carries object.linger (module-link-factory.c,
// link_initialized), and WirePlumber's si-standard-link creates every
// stream link without it (modules/module-si-standard-link.c,
// create_links). So when the wireplumber container restarts (its
// liveness probe after the media bus went away, say) every stream on a
// card sink was unlinked until the new WirePlumber linked it again,
// measured 1.0 to 5.4 s of silence. The script makes WirePlumber's
// stream links outlive it and makes the next WirePlumber adopt them:
//
//   - after linking/link-target has linked a stream, it replaces each of
//     WirePlumber's own links of that stream with a lingering link
//     between the same ports, marked with KeptLinkProperty. The old link
//     is destroyed and the new one created in one batch on one
//     connection, which PipeWire handles in one pass of its main loop
//     (the factory refuses a second link between the same ports with
//     EEXIST, so the order cannot be the other way round);
//   - before linking/prepare-link, when WirePlumber has not linked the
//     stream itself and lingering links already join it to the target
//     WirePlumber chose, it records the stream as linked to that target,
//     so WirePlumber does not link the same ports again (the factory's
//     EEXIST would come back as an error sent to the stream's client),
//     and it destroys kept links to any other node, as WirePlumber
//     destroys its own when it moves a stream.
//
// A kept link goes when either port goes (PipeWire destroys a port's
// links with it), so a stream that ends or a sink that disappears leaves
// nothing behind.
//
//go:embed keep-links.lua
var KeepLinksScript []byte

// KeepLinksComponent is the feature name KeepLinksScript provides in
// WirePlumber's component list.
const KeepLinksComponent = "liken.linking.keep-links"

// KeptLinkProperty is the link property KeepLinksScript sets ("true")
// on the lingering links it makes.
const KeptLinkProperty = "liken.link.kept"
