package audio

import (
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

// Endpoint is one playback PCM of a claimed card: the unit the operator
// declares to PipeWire and publishes as a device.
type Endpoint struct {
	Card     alsa.CardInfo
	Identity alsa.CardIdentity
	PCM      alsa.PCM
	// Name is the DRA device name: the node name, the card's bus and
	// location, and the PCM id, e.g. "kitchen-pci-0000-00-1f-3-hdmi-0".
	// Stable across boots, unlike card and PCM numbers.
	Name string
	// NodeName is the PipeWire node.name declared for it: NodeNamePrefix
	// and Name without the node part, so it does not change with the node
	// a card moves to.
	NodeName string
}

// Endpoints lists the playback PCMs of cards. An output whose name cannot
// be formed (no sysfs identity, or a name over 63 characters) is left out
// with an error naming the card and PCM, never truncated into a collision.
func Endpoints(node string, cards []CardState) ([]Endpoint, []error) {
	var out []Endpoint
	var problems []error
	seen := map[string]alsa.PCM{}
	for _, c := range cards {
		// A USB card may give several PCMs one id ("USB Audio" on a dock);
		// the device number, fixed by the card's descriptors, tells them
		// apart.
		ids := map[string]int{}
		for _, p := range c.Card.PCMs {
			if p.Stream() == alsa.Playback {
				ids[dnsLabel(p.Info.ID)]++
			}
		}
		for _, p := range c.Card.PCMs {
			if p.Stream() != alsa.Playback {
				continue
			}
			info := p.Info
			if ids[dnsLabel(info.ID)] > 1 {
				info.ID = fmt.Sprintf("%s %d", info.ID, info.Device)
			}
			name, err := DeviceName(node, c.Identity, info)
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: %w", p, err))
				continue
			}
			if prev, dup := seen[name]; dup {
				problems = append(problems, fmt.Errorf("%s: device name %q already names %s", p, name, prev))
				continue
			}
			seen[name] = p
			out = append(out, Endpoint{Card: c.Card.Info, Identity: c.Identity, PCM: p, Name: name,
				NodeName: NodeNamePrefix + strings.TrimPrefix(name, dnsLabel(node)+"-")})
		}
	}
	return out, problems
}

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

// dnsLabel lowercases s and turns every run of other characters into one
// dash, trimmed at both ends.
func dnsLabel(s string) string {
	return strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// DeviceName forms an output's DRA device name from the node, the card's
// place (PCI function address; USB vendor, product and serial, else its
// port path; a platform device's name) and the PCM id. Errors: the card has
// no sysfs identity or PCM id, or the result is not a DNS label of at most
// 63 characters.
func DeviceName(node string, id alsa.CardIdentity, pcm alsa.PCMInfo) (string, error) {
	var place string
	switch {
	case id.Bus == "usb" && id.USBVendor != "" && id.USBSerial != "":
		place = "usb-" + id.USBVendor + "-" + id.USBProduct + "-" + id.USBSerial
	case id.Bus == "usb" && id.USBVendor != "":
		place = "usb-" + id.USBVendor + "-" + id.USBProduct + "-" + id.Location
	case id.Bus != "" && id.Location != "":
		place = id.Bus + "-" + id.Location
	default:
		return "", fmt.Errorf("card %d has no bus location in sysfs to name its outputs by", pcm.Card)
	}
	if dnsLabel(pcm.ID) == "" {
		return "", fmt.Errorf("PCM %d has no id to name it by", pcm.Device)
	}
	name := dnsLabel(node) + "-" + dnsLabel(place) + "-" + dnsLabel(pcm.ID)
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return "", fmt.Errorf("device name %q: %s", name, strings.Join(errs, "; "))
	}
	return name, nil
}
