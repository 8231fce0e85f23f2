// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// AlsaInfo is what ImportAlsaInfo reads out of an alsa-info.sh report.
type AlsaInfo struct {
	// Cards are the recognised cards as dumps, by card number: card info
	// from the card list and the amixer header, PCMs from aplay -l and
	// arecord -l, controls from the alsactl state.
	Cards []*alsa.Dump
	// DevSnd lists the node names the report shows directly under
	// /dev/snd ("controlC0", "pcmC0D3p", "timer"), in report order.
	DevSnd []string
}

var (
	infoCardLine   = regexp.MustCompile(`^\s*([0-9]{1,3}) \[(\S+?)\s*\]: (.+?) - (.*)$`)
	infoPCMLine    = regexp.MustCompile(`^card ([0-9]{1,3}): (\S+) \[(.*)\], device ([0-9]{1,3}): (.*) \[(.*)\]$`)
	infoSubdevices = regexp.MustCompile(`^\s+Subdevices: ([0-9]+)/([0-9]+)$`)
	infoMixerCard  = regexp.MustCompile(`^Card \S*?:([0-9]{1,3}) '`)
	infoMixerField = regexp.MustCompile(`^\s+(Mixer name|Components)\s*: '(.*)'$`)
	infoDevNode    = regexp.MustCompile(`\s/dev/snd/([^/\s]+)$`)
)

// ImportAlsaInfo reads an alsa-info.sh report, whole or an excerpt that
// keeps its "!!Section" headers, into one dump per recognised card. The
// sections read are "Soundcards recognised by ALSA" (required),
// "Aplay/Arecord output", "Amixer output", "Alsactl output" and "ALSA
// Device nodes"; the others are skipped. Every dump is validated. An
// alsactl state, PCM or mixer line for a card the card list does not have,
// or a line that does not parse, is an error naming the line.
func ImportAlsaInfo(text []byte) (AlsaInfo, error) {
	sections := splitAlsaInfo(string(text))
	var info AlsaInfo
	cards, ok := sections["Soundcards recognised by ALSA"]
	if !ok {
		return info, fmt.Errorf("alsa-info: no \"Soundcards recognised by ALSA\" section")
	}
	byNumber := map[int]*alsa.Dump{}
	byID := map[string]*alsa.Dump{}
	for i := 0; i < len(cards.lines); i++ {
		line := cards.lines[i]
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := infoCardLine.FindStringSubmatch(line)
		if m == nil {
			if i > 0 && infoCardLine.MatchString(cards.lines[i-1]) {
				continue // the long name, read with its card
			}
			return info, fmt.Errorf("alsa-info line %d: %q is not a card line", cards.first+i, line)
		}
		n, _ := strconv.Atoi(m[1])
		if byNumber[n] != nil || byID[m[2]] != nil {
			return info, fmt.Errorf("alsa-info line %d: card %d (%s) listed twice", cards.first+i, n, m[2])
		}
		d := &alsa.Dump{Card: n, Source: "alsa-info.sh", Info: alsa.DumpCardInfo{ID: m[2], Driver: m[3], Name: m[4]}}
		if i+1 < len(cards.lines) && !infoCardLine.MatchString(cards.lines[i+1]) {
			d.Info.LongName = strings.TrimSpace(cards.lines[i+1])
		}
		byNumber[n], byID[m[2]] = d, d
		info.Cards = append(info.Cards, d)
	}
	card := func(n int, line int) (*alsa.Dump, error) {
		if d := byNumber[n]; d != nil {
			return d, nil
		}
		return nil, fmt.Errorf("alsa-info line %d: card %d is not in the card list", line, n)
	}

	if s, ok := sections["Aplay/Arecord output"]; ok {
		stream := alsa.Playback
		var last *alsa.DumpPCM
		for i, line := range s.lines {
			switch {
			case strings.Contains(line, "List of PLAYBACK Hardware Devices"):
				stream, last = alsa.Playback, nil
			case strings.Contains(line, "List of CAPTURE Hardware Devices"):
				stream, last = alsa.Capture, nil
			case infoPCMLine.MatchString(line):
				m := infoPCMLine.FindStringSubmatch(line)
				n, _ := strconv.Atoi(m[1])
				d, err := card(n, s.first+i)
				if err != nil {
					return info, err
				}
				dev, _ := strconv.Atoi(m[4])
				d.PCMs = append(d.PCMs, alsa.DumpPCM{Device: dev, Stream: stream.String(), ID: m[5], Name: m[6], Subdevices: 1, SubdevicesAvail: 1})
				last = &d.PCMs[len(d.PCMs)-1]
			case infoSubdevices.MatchString(line) && last != nil:
				m := infoSubdevices.FindStringSubmatch(line)
				last.SubdevicesAvail, _ = strconv.Atoi(m[1])
				last.Subdevices, _ = strconv.Atoi(m[2])
			}
		}
	}

	if s, ok := sections["Amixer output"]; ok {
		var cur *alsa.Dump
		for i, line := range s.lines {
			if m := infoMixerCard.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				var err error
				if cur, err = card(n, s.first+i); err != nil {
					return info, err
				}
			} else if m := infoMixerField.FindStringSubmatch(line); m != nil && cur != nil {
				if m[1] == "Mixer name" {
					cur.Info.MixerName = m[2]
				} else {
					cur.Info.Components = m[2]
				}
			}
		}
	}

	if s, ok := sections["Alsactl output"]; ok {
		var body []string
		for _, line := range s.lines {
			if !strings.HasPrefix(line, "--startcollapse--") && !strings.HasPrefix(line, "--endcollapse--") {
				body = append(body, line)
			}
		}
		states, err := importAlsactlState(strings.Join(body, "\n"), s.first)
		if err != nil {
			return info, fmt.Errorf("alsa-info: %w", err)
		}
		for id, controls := range states {
			d := byID[id]
			if d == nil {
				return info, fmt.Errorf("alsa-info: alsactl state for card id %q, which the card list does not have", id)
			}
			d.Controls = controls
		}
	}

	if s, ok := sections["ALSA Device nodes"]; ok {
		for _, line := range s.lines {
			if m := infoDevNode.FindStringSubmatch(line); m != nil {
				info.DevSnd = append(info.DevSnd, m[1])
			}
		}
	}

	slices.SortFunc(info.Cards, func(a, b *alsa.Dump) int { return a.Card - b.Card })
	for _, d := range info.Cards {
		if err := d.Validate(); err != nil {
			return info, fmt.Errorf("alsa-info: %w", err)
		}
	}
	return info, nil
}

// infoSection is the body of one "!!Title" section and the line number
// its first line has in the report.
type infoSection struct {
	first int
	lines []string
}

// splitAlsaInfo cuts a report at its headers: a "!!Title" line followed by
// a "!!---" underline.
func splitAlsaInfo(text string) map[string]infoSection {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	out := map[string]infoSection{}
	title := ""
	var cur infoSection
	flush := func() {
		if title != "" {
			if _, dup := out[title]; !dup {
				out[title] = cur
			}
		}
	}
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "!!") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "!!-") {
			flush()
			title = strings.TrimSpace(strings.TrimPrefix(lines[i], "!!"))
			cur = infoSection{first: i + 3}
			i++
			continue
		}
		cur.lines = append(cur.lines, lines[i])
	}
	flush()
	return out
}
