// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/atomicfile"
)

// DeclarationFile is the drop-in the outputs are declared in, under
// PipeWire's pipewire.conf.d. The 60 orders it after the image's own
// 50-* fragments; PipeWire appends the context.objects of every fragment
// to those of pipewire.conf.
const DeclarationFile = "60-liken-outputs.conf"

// DeclarationDir is where the pod mounts PipeWire's drop-in directory
// (deploy/audio/operator.yaml's pipewire-config volume).
const DeclarationDir = "/etc/pipewire/pipewire.conf.d"

// declarationHeader opens every declaration. SPA-JSON comments run from
// '#' to the end of the line.
const declarationHeader = `# Written by audio-operator: one ALSA PCM adapter node per PCM device the
# pod's claim delivered. PipeWire reads it once, when it starts; the
# operator rewrites it for a layout change and PipeWire is then restarted.
`

// declarationKey is the configuration section the objects go in.
const declarationKey = "context.objects"

// CheckOutputs validates every output (Output.Validate) and the set: no
// node name twice, no PCM device and direction twice. The error names the
// offending output.
func CheckOutputs(outputs []Output) error {
	names := make(map[string]int, len(outputs))
	pcms := make(map[PCM]bool, len(outputs))
	for i, o := range outputs {
		if err := o.Validate(); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
		if j, dup := names[o.Name]; dup {
			return fmt.Errorf("output %d: node name %q is also output %d's", i, o.Name, j)
		}
		names[o.Name] = i
		if pcms[o.PCM()] {
			return fmt.Errorf("output %d: %s is declared twice", i, o.PCM())
		}
		pcms[o.PCM()] = true
	}
	return nil
}

// sortOutputs orders a copy by card, PCM device, then direction (playback
// first), so the same set always gives the same bytes.
func sortOutputs(outputs []Output) []Output {
	s := slices.Clone(outputs)
	slices.SortStableFunc(s, func(a, b Output) int {
		if a.Card != b.Card {
			return a.Card - b.Card
		}
		if a.Device != b.Device {
			return a.Device - b.Device
		}
		return int(a.Direction) - int(b.Direction)
	})
	return s
}

// MarshalDeclaration returns the drop-in text declaring outputs, sorted by
// card, PCM device and direction: a comment header, then
// `context.objects = ` and a strict-JSON array (strict JSON is a subset of
// PipeWire's SPA-JSON, and encoding/json does the escaping: quotes,
// backslashes, control characters and non-ASCII text all round-trip
// through PipeWire 1.4.2, measured). Every property value is a string, as
// PipeWire keeps properties. Each object is an "adapter" with flag
// "nofail", so a PCM that cannot be opened costs its own node and not
// PipeWire's start. Withheld outputs follow in a WithheldKey array of the
// same form, a section PipeWire does not read (it reads only the sections
// it knows; measured with 1.4.2: no node appears for them), left out when
// there are none. It returns CheckOutputs' error for a bad set.
func MarshalDeclaration(outputs []Output) ([]byte, error) {
	if err := CheckOutputs(outputs); err != nil {
		return nil, err
	}
	var live, withheld []Output
	for _, o := range sortOutputs(outputs) {
		if o.Withheld != "" {
			withheld = append(withheld, o)
		} else {
			live = append(live, o)
		}
	}
	var b bytes.Buffer
	b.WriteString(declarationHeader)
	writeObjects(&b, declarationKey, live)
	if len(withheld) > 0 {
		b.WriteString(withheldComment)
		writeObjects(&b, WithheldKey, withheld)
	}
	return b.Bytes(), nil
}

// WithheldKey is the section of the declaration that records the outputs
// PipeWire gets no node for (Output.Withheld). PipeWire's daemon does not
// read it.
const WithheldKey = "liken.audio.withheld-objects"

const withheldComment = `# Outputs withheld from PipeWire (no node, so no stream can reach them):
# recorded so that the operator declares them when they can play again.
`

// writeObjects writes `key = [ ... ]` with one adapter object per output.
func writeObjects(b *bytes.Buffer, key string, outputs []Output) {
	b.WriteString(key + " = [\n")
	for i, o := range outputs {
		b.WriteString("  {\n    \"factory\": \"adapter\",\n    \"flags\": [\"nofail\"],\n    \"args\": {\n")
		props := o.properties()
		for j, p := range props {
			b.WriteString("      ")
			b.Write(quote(p[0]))
			b.WriteString(": ")
			b.Write(quote(p[1]))
			if j < len(props)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("    }\n  }")
		if i < len(outputs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
}

// Args returns o's adapter arguments, the properties its declaration
// gives the node: what a client passes the "adapter" factory to make the
// same node again.
func (o Output) Args() map[string]string {
	props := o.properties()
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p[0]] = p[1]
	}
	return out
}

// properties lists o's adapter arguments in the order they are written.
func (o Output) properties() [][2]string {
	p := [][2]string{
		{PropFactoryName, o.Direction.Factory()},
		{PropNodeName, o.Name},
	}
	if o.Description != "" {
		p = append(p, [2]string{PropDescription, o.Description})
	}
	p = append(p,
		[2]string{PropMediaClass, o.Direction.MediaClass()},
		[2]string{PropALSAPath, o.ALSAPath()},
		[2]string{PropALSACard, strconv.Itoa(o.Card)},
		[2]string{PropALSADevice, strconv.Itoa(o.Device)},
	)
	if o.Rate > 0 {
		p = append(p, [2]string{PropRate, strconv.Itoa(o.Rate)})
	}
	if o.Channels > 0 {
		p = append(p, [2]string{PropChannels, strconv.Itoa(o.Channels)})
	}
	if len(o.Positions) > 0 {
		p = append(p, [2]string{PropPosition, strings.Join(o.Positions, ",")})
	}
	if o.UseChannelMap {
		p = append(p, [2]string{PropUseChmap, "true"})
	}
	p = append(p,
		[2]string{PropCard, strconv.Itoa(o.Card)},
		[2]string{PropPCM, strconv.Itoa(o.Device)},
	)
	if o.PCMID != "" {
		p = append(p, [2]string{PropPCMID, o.PCMID})
	}
	if o.Output != "" {
		p = append(p, [2]string{PropOutput, o.Output})
	}
	if o.Withheld != "" {
		p = append(p, [2]string{PropWithheld, o.Withheld})
	}
	extra := make([]string, 0, len(o.Extra))
	for k := range o.Extra {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	for _, k := range extra {
		p = append(p, [2]string{k, o.Extra[k]})
	}
	return p
}

// quote returns s as a JSON string. HTML escaping is off, so '<', '>' and
// '&' stay as they are; encoding/json still escapes '"', '\\', control
// characters, U+2028 and U+2029, all of which SPA-JSON reads back.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// declaredObject is one element of the context.objects array as
// MarshalDeclaration writes it.
type declaredObject struct {
	Factory string            `json:"factory"`
	Flags   []string          `json:"flags"`
	Args    map[string]string `json:"args"`
}

// ErrNotDeclaration is wrapped by ParseDeclaration's errors for text that
// is not a declaration this package writes.
var ErrNotDeclaration = errors.New("not an audio-operator declaration")

// ParseDeclaration reads text written by MarshalDeclaration back into the
// outputs it declares, in file order. It reads exactly that form: '#'
// comment lines, `context.objects`, '=' (or ':'), a strict-JSON array of
// adapter objects whose arguments are all strings, optionally the
// WithheldKey array of the same form (each object carrying
// liken.audio.withheld, and only those), and nothing after that but
// white space and comments; withheld outputs come last. Hand-written SPA-JSON (bare words, no
// commas) is refused rather than guessed at. An ALSA path equal to
// "hw:<card>,<device>" is returned as an empty Path. Errors wrap
// ErrNotDeclaration and name what was wrong and, for an object, its
// index; the outputs are checked with CheckOutputs.
func ParseDeclaration(data []byte) ([]Output, error) {
	rest := skipComments(data)
	objects, rest, err := parseSection(rest, declarationKey)
	if err != nil {
		return nil, err
	}
	var withheld []declaredObject
	if rest = skipComments(rest); bytes.HasPrefix(rest, []byte(WithheldKey)) {
		if withheld, rest, err = parseSection(rest, WithheldKey); err != nil {
			return nil, err
		}
	}
	if t := skipComments(rest); len(t) != 0 {
		return nil, fmt.Errorf("%w: text after the %s array: %q", ErrNotDeclaration, declarationKey, clip(t, 40))
	}
	outputs := make([]Output, 0, len(objects)+len(withheld))
	for i, obj := range append(objects, withheld...) {
		o, err := obj.output()
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", ErrNotDeclaration, i, err)
		}
		if (i >= len(objects)) != (o.Withheld != "") {
			return nil, fmt.Errorf("%w: object %d: %s is set only on, and on every, object of %s", ErrNotDeclaration, i, PropWithheld, WithheldKey)
		}
		outputs = append(outputs, o)
	}
	if err := CheckOutputs(outputs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotDeclaration, err)
	}
	return outputs, nil
}

// parseSection reads `key = [ ... ]` at the start of b and returns its
// objects and what follows.
func parseSection(b []byte, key string) ([]declaredObject, []byte, error) {
	if !bytes.HasPrefix(b, []byte(key)) {
		return nil, nil, fmt.Errorf("%w: no %s section at the start", ErrNotDeclaration, key)
	}
	b = bytes.TrimLeft(b[len(key):], " \t\r\n")
	if len(b) == 0 || (b[0] != '=' && b[0] != ':') {
		return nil, nil, fmt.Errorf("%w: %s is not followed by '='", ErrNotDeclaration, key)
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return nil, nil, fmt.Errorf("%w: %s is not an array", ErrNotDeclaration, key)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var objects []declaredObject
	if err := dec.Decode(&objects); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrNotDeclaration, key, err)
	}
	return objects, b[dec.InputOffset():], nil
}

// output maps one adapter object back to the Output that wrote it.
func (obj declaredObject) output() (Output, error) {
	var o Output
	if obj.Factory != "adapter" {
		return o, fmt.Errorf("factory %q, want \"adapter\"", obj.Factory)
	}
	if obj.Args == nil {
		return o, fmt.Errorf("no args")
	}
	args := make(map[string]string, len(obj.Args))
	for k, v := range obj.Args {
		args[k] = v
	}
	take := func(key string) (string, bool) {
		v, ok := args[key]
		delete(args, key)
		return v, ok
	}
	need := func(key string) (string, error) {
		v, ok := take(key)
		if !ok {
			return "", fmt.Errorf("no %s", key)
		}
		return v, nil
	}
	number := func(key string, required bool) (int, error) {
		v, ok := take(key)
		if !ok {
			if required {
				return 0, fmt.Errorf("no %s", key)
			}
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || strconv.Itoa(n) != v {
			return 0, fmt.Errorf("%s = %q is not a decimal number", key, v)
		}
		return n, nil
	}
	var err error
	factory, err := need(PropFactoryName)
	if err != nil {
		return o, err
	}
	switch factory {
	case FactorySink:
		o.Direction = Playback
	case FactorySource:
		o.Direction = Capture
	default:
		return o, fmt.Errorf("%s = %q is not an ALSA PCM factory", PropFactoryName, factory)
	}
	class, err := need(PropMediaClass)
	if err != nil {
		return o, err
	}
	if class != o.Direction.MediaClass() {
		return o, fmt.Errorf("%s = %q does not match %s %s", PropMediaClass, class, PropFactoryName, factory)
	}
	if o.Name, err = need(PropNodeName); err != nil {
		return o, err
	}
	o.Description, _ = take(PropDescription)
	if o.Card, err = number(PropCard, true); err != nil {
		return o, err
	}
	if o.Device, err = number(PropPCM, true); err != nil {
		return o, err
	}
	alsaCard, err := number(PropALSACard, true)
	if err != nil {
		return o, err
	}
	alsaDevice, err := number(PropALSADevice, true)
	if err != nil {
		return o, err
	}
	if alsaCard != o.Card || alsaDevice != o.Device {
		return o, fmt.Errorf("ALSA card %d PCM %d differs from %s %d %s %d", alsaCard, alsaDevice, PropCard, o.Card, PropPCM, o.Device)
	}
	if o.Path, err = need(PropALSAPath); err != nil {
		return o, err
	}
	if o.Path == DefaultALSAPath(o.Card, o.Device) {
		o.Path = ""
	} else if o.Path == "" {
		return o, fmt.Errorf("empty %s", PropALSAPath)
	}
	if o.Rate, err = number(PropRate, false); err != nil {
		return o, err
	}
	if o.Channels, err = number(PropChannels, false); err != nil {
		return o, err
	}
	if pos, ok := take(PropPosition); ok {
		o.Positions = strings.Split(pos, ",")
	}
	if v, ok := take(PropUseChmap); ok {
		switch v {
		case "true":
			o.UseChannelMap = true
		case "false":
		default:
			return o, fmt.Errorf("%s = %q is not true or false", PropUseChmap, v)
		}
	}
	o.PCMID, _ = take(PropPCMID)
	o.Output, _ = take(PropOutput)
	o.Withheld, _ = take(PropWithheld)
	if len(args) > 0 {
		o.Extra = args
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// skipComments drops leading white space and '#' comment lines.
func skipComments(b []byte) []byte {
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		if len(b) == 0 || b[0] != '#' {
			return b
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		} else {
			return nil
		}
	}
}

// clip shortens b for an error message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// WriteDeclaration writes the declaration of outputs (MarshalDeclaration)
// to dir/DeclarationFile, mode 0644, creating dir (0755) if needed, and
// returns the file's path. The write is atomic: a temporary file in dir
// is written, synced and renamed over the old one, so PipeWire starting
// at any moment reads the old declaration or the new one, never a part.
// A bad set of outputs is refused before anything is touched.
func WriteDeclaration(dir string, outputs []Output) (string, error) {
	data, err := MarshalDeclaration(outputs)
	if err != nil {
		return "", fmt.Errorf("declaration not written: %w", err)
	}
	path := filepath.Join(dir, DeclarationFile)
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// ReadDeclaration reads and parses (ParseDeclaration) the declaration at
// path. A missing file is an error wrapping fs.ErrNotExist, so the caller
// can tell "never declared" from "unreadable" and "not ours".
func ReadDeclaration(path string) ([]Output, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read declaration: %w", err)
	}
	outputs, err := ParseDeclaration(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return outputs, nil
}
