// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// Card is what one card's control interface says about its PCM devices:
// what declare and the operator need to declare and publish its outputs.
type Card struct {
	Info CardInfo
	// PCMs are the card's PCM devices, one entry per direction, sorted by
	// device then playback before capture.
	PCMs []PCM
	// Jacks are the card's jack-detection elements, in the card's order;
	// JacksErr says which could not be read.
	Jacks    []Jack
	JacksErr error
	// Elements is the card's element list as read.
	Elements []ElemID
}

// PCM is one direction of one PCM device, with what the control interface
// says about it.
type PCM struct {
	// Info is substream 0's PCM_INFO: Info.ID ("HDMI 0", "USB Audio") is
	// the stable part of the output's name.
	Info PCMInfo
	// HasELD says the card has an ELD element for this device: the PCM is
	// an HDMI or DisplayPort output, with a monitor or not. Set on the
	// playback entry only.
	HasELD bool
	// ELD is that element's state (empty when HasELD is false).
	ELD ELDState
	// ChannelMap is the substream's current channel map (SNDRV_CHMAP_*
	// positions), nil when the card has none for it.
	ChannelMap []uint32
	// ChannelMapErr is why ChannelMap could not be read.
	ChannelMapErr error
	// Jack is the HDMI/DP jack serving this device ("HDMI/DP,pcm=N
	// Jack"), nil when there is none.
	Jack *Jack
}

// Card is the card number (this boot).
func (p PCM) Card() int { return p.Info.Card }

// Device is the PCM device number (this boot).
func (p PCM) Device() int { return p.Info.Device }

// Stream is the direction.
func (p PCM) Stream() Stream { return p.Info.Stream }

// String names the PCM for log lines: "card 0 PCM 3 playback".
func (p PCM) String() string {
	return fmt.Sprintf("card %d PCM %d %s", p.Info.Card, p.Info.Device, p.Info.Stream)
}

// ALSAPath is the device string PipeWire's api.alsa.path takes: "hw:0,3".
func (p PCM) ALSAPath() string { return fmt.Sprintf("hw:%d,%d", p.Info.Card, p.Info.Device) }

// MaxPCMDevices bounds the PCM enumeration against a looping backend:
// ReadCard asks a card for at most this many PCM devices.
const MaxPCMDevices = 256

// ReadCard reads a card through its control interface: CARD_INFO, the
// element list, every PCM device (PCM_NEXT_DEVICE) in both directions
// (PCM_INFO), each playback PCM's ELD element, each PCM's channel map, and
// the jacks. A failure of the card-wide reads (card info, element list,
// PCM enumeration or info) is returned; a failure reading one PCM's ELD or
// channel map is kept in that PCM (ELD.Err, ChannelMapErr), and a jack's
// in JacksErr, so every other output is still read.
func ReadCard(c Control) (*Card, error) {
	info, err := c.CardInfo()
	if err != nil {
		return nil, err
	}
	ids, err := c.Elements()
	if err != nil {
		return nil, err
	}
	card := &Card{Info: info, Elements: ids}
	card.Jacks, card.JacksErr = ReadJacks(c, ids)
	has := func(want ElemID) bool {
		return slices.ContainsFunc(ids, func(id ElemID) bool { return id.sameElement(want) })
	}
	dev := -1
	for range MaxPCMDevices {
		next, err := c.NextPCMDevice(dev)
		if err != nil {
			return nil, err
		}
		if next < 0 {
			break
		}
		if next <= dev {
			return nil, fmt.Errorf("card %d: PCM_NEXT_DEVICE after %d answered %d", info.Card, dev, next)
		}
		dev = next
		for _, stream := range []Stream{Playback, Capture} {
			pi, err := c.PCMInfo(dev, 0, stream)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return nil, err
			}
			p := PCM{Info: pi}
			if stream == Playback && has(ELDElemID(dev)) {
				p.HasELD = true
				p.ELD, _ = ReadELD(c, dev)
			}
			if has(ChannelMapElemID(dev, 0, stream)) {
				p.ChannelMap, p.ChannelMapErr = ReadChannelMap(c, dev, 0, stream)
			}
			for i := range card.Jacks {
				if card.Jacks[i].PCM == dev && stream == Playback {
					p.Jack = &card.Jacks[i]
				}
			}
			card.PCMs = append(card.PCMs, p)
		}
	}
	slices.SortFunc(card.PCMs, func(a, b PCM) int {
		return cmp.Or(cmp.Compare(a.Info.Device, b.Info.Device), cmp.Compare(a.Info.Stream, b.Info.Stream))
	})
	return card, nil
}

// PCM returns the entry for device and stream, or nil.
func (c *Card) PCM(device int, stream Stream) *PCM {
	for i := range c.PCMs {
		if c.PCMs[i].Info.Device == device && c.PCMs[i].Info.Stream == stream {
			return &c.PCMs[i]
		}
	}
	return nil
}
