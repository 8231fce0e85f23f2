// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/liken-sh/operators/internal/alsa"
)

// DriverName is the DRA driver name; also the domain of attributes and
// taint keys, and the CDI vendor.
const DriverName = "audio.liken.sh"

// CDIClass is the CDI class: device IDs are audio.liken.sh/output=<...>.
const CDIClass = "output"

// NodeNamePrefix starts every PipeWire node.name this operator declares.
const NodeNamePrefix = "liken.audio."

// CardState is one claimed card as read at a moment: its control interface
// and where it sits in the machine.
type CardState struct {
	Card     *alsa.Card
	Identity alsa.CardIdentity
}

// Endpoint is one PCM of a claimed card: a playback PCM (a sink) or a
// capture PCM (a source), the unit the operator declares to PipeWire,
// publishes as a device and keeps a Sink or Source object for.
type Endpoint struct {
	Card     alsa.CardInfo
	Identity alsa.CardIdentity
	PCM      alsa.PCM
	// Name is the DRA device name: the node name, the card's bus and
	// location, and the PCM id, e.g. "kitchen-pci-0000-00-1f-3-hdmi-0";
	// a capture PCM's ends in CaptureSuffix. Stable across boots, unlike
	// card and PCM numbers.
	Name string
	// NodeName is the PipeWire node.name declared for it: NodeNamePrefix
	// and Name without the node part, so it does not change with the node
	// a card moves to.
	NodeName string
}

// CaptureSuffix ends the name of every capture endpoint, so a card's
// playback and capture PCMs of one id ("ALC3266 Analog") stay apart.
const CaptureSuffix = "-capture"

// Capture reports whether the endpoint is a capture PCM (a Source).
func (e Endpoint) Capture() bool { return e.PCM.Stream() == alsa.Capture }

// Endpoints lists the playback and capture PCMs of cards, each card's
// playback PCMs first. An output whose name cannot
// be formed (no sysfs identity, no PCM id) is left out with an error naming
// the card and PCM, never truncated into a collision.
func Endpoints(node string, cards []CardState) ([]Endpoint, []error) {
	var out []Endpoint
	var problems []error
	seen := map[string]alsa.PCM{}
	// Two identical USB devices can report one serial (the recorded Razer
	// headset's is "00000000"); such cards are told apart by their port.
	places := map[string]int{}
	for _, c := range cards {
		places[place(c.Identity, false)]++
	}
	for _, c := range cards {
		byPort := places[place(c.Identity, false)] > 1
		// A USB card may give several PCMs one id ("USB Audio" on a dock);
		// the device number, fixed by the card's descriptors, tells them
		// apart.
		ids := map[alsa.Stream]map[string]int{alsa.Playback: {}, alsa.Capture: {}}
		for _, p := range c.Card.PCMs {
			if ids[p.Stream()] != nil {
				ids[p.Stream()][dnsLabel(p.Info.ID)]++
			}
		}
		for _, stream := range []alsa.Stream{alsa.Playback, alsa.Capture} {
			for _, p := range c.Card.PCMs {
				if p.Stream() != stream {
					continue
				}
				info := p.Info
				if ids[stream][dnsLabel(info.ID)] > 1 {
					info.ID = fmt.Sprintf("%s %d", info.ID, info.Device)
				}
				if stream == alsa.Capture && dnsLabel(info.ID) != "" {
					info.ID += CaptureSuffix
				}
				name, err := deviceName(node, place(c.Identity, byPort), info)
				if err != nil {
					problems = append(problems, fmt.Errorf("%s: %w", p, err))
					continue
				}
				if prev, dup := seen[name]; dup {
					problems = append(problems, fmt.Errorf("%s: device name %q already names %s", p, name, prev))
					continue
				}
				seen[name] = p
				out = append(out, Endpoint{Card: c.Card.Info, Identity: c.Identity, PCM: p, Name: name})
			}
		}
	}
	// The node.name is the name without its node part, so it does not
	// change with the node a card moves to.
	for i := range out {
		out[i].NodeName = NodeNamePrefix + strings.TrimPrefix(out[i].Name, nodePart(node, out[i].Name)+"-")
	}
	return out, problems
}

// nodePart is the node prefix name was formed with.
func nodePart(node, name string) string {
	for _, n := range []string{dnsLabel(node), shortNode(node)} {
		if strings.HasPrefix(name, n+"-") {
			return n
		}
	}
	return ""
}

// shortNode is the node's first DNS label ("ip-172-31-20-123" of an
// EC2 name), the machine's own name.
func shortNode(node string) string {
	return dnsLabel(strings.SplitN(node, ".", 2)[0])
}

// place is where a card sits: PCI function address; USB vendor, product
// and serial (or port path when byPort, or when it has no serial); a
// platform device's name. "" when sysfs did not place it.
func place(id alsa.CardIdentity, byPort bool) string {
	switch {
	case id.Bus == "usb" && id.USBVendor != "" && id.USBSerial != "" && !byPort:
		return "usb-" + id.USBVendor + "-" + id.USBProduct + "-" + id.USBSerial
	case id.Bus == "usb" && id.USBVendor != "":
		return "usb-" + id.USBVendor + "-" + id.USBProduct + "-" + id.Location
	case id.Bus != "" && id.Location != "":
		return id.Bus + "-" + id.Location
	}
	return ""
}

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

// dnsLabel lowercases s and turns every run of other characters into one
// dash, trimmed at both ends.
func dnsLabel(s string) string {
	return strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// DeviceName forms an output's DRA device name from the node, the card's
// place (see place) and the PCM id: "kitchen-pci-0000-00-1f-3-hdmi-0".
// Past 63 characters the node part becomes its first DNS label, then the
// place becomes a hash of itself ("h" and 12 hex digits of its SHA-256):
// still stable, still distinct, never a cut that could collide. Errors: the
// card has no sysfs place or the PCM no id.
func DeviceName(node string, id alsa.CardIdentity, pcm alsa.PCMInfo) (string, error) {
	return deviceName(node, place(id, false), pcm)
}

func deviceName(node, where string, pcm alsa.PCMInfo) (string, error) {
	if where == "" {
		return "", fmt.Errorf("card %d has no bus location in sysfs to name its outputs by", pcm.Card)
	}
	if dnsLabel(pcm.ID) == "" {
		return "", fmt.Errorf("PCM %d has no id to name it by", pcm.Device)
	}
	sum := sha256.Sum256([]byte(where))
	hashed := "h" + hex.EncodeToString(sum[:6])
	var tried []string
	for _, n := range []string{dnsLabel(node), shortNode(node)} {
		for _, p := range []string{dnsLabel(where), hashed} {
			name := n + "-" + p + "-" + dnsLabel(pcm.ID)
			if len(validation.IsDNS1123Label(name)) == 0 {
				return name, nil
			}
			tried = append(tried, name)
		}
	}
	return "", fmt.Errorf("no device name within 63 characters (tried %q)", tried[len(tried)-1])
}
