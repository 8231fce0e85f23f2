// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Format spells the control's current value as status.observed.controls
// shows it and Parse reads it back: an integer as its decimal number, a
// boolean as "on" or "off", an enumerated value as its item's name (an
// item number the control does not have, which no driver should report,
// as the number). When every channel holds the same value, that one value
// ("75"); when they differ, each channel's value in order, joined by
// commas ("75,70"), so the status never hides a difference. Parse reads
// back whatever Format writes, unless an enumerated control's item names
// make the list ambiguous (an item named "B,C" beside items "B" and "C").
func (c Control) Format() string {
	parts := make([]string, 0, len(c.Value))
	for _, x := range c.Value {
		parts = append(parts, c.formatOne(x))
	}
	if len(parts) > 0 && !slices.ContainsFunc(parts, func(p string) bool { return p != parts[0] }) {
		return parts[0]
	}
	return strings.Join(parts, ",")
}

func (c Control) formatOne(x int64) string {
	switch c.Type {
	case alsa.TypeBoolean:
		if x != 0 {
			return "on"
		}
		return "off"
	case alsa.TypeEnumerated:
		if x >= 0 && x < int64(len(c.Items)) {
			return c.Items[x]
		}
	}
	return strconv.FormatInt(x, 10)
}

// Parse reads a spec value for the control into the value Write takes,
// one entry per channel:
//
//   - integer: a decimal number within Min..Max and, with a Step above 1,
//     a whole number of steps above Min;
//   - boolean: "on" or "off"; "true"/"false" and "1"/"0" too (any case),
//     since YAML and people spell switches so;
//   - enumerated: an item's name, exactly as the card spells it.
//
// One value sets every channel alike. A comma-separated list with one
// value per channel sets each channel, as Format spells a difference (an
// enumerated value is first tried whole, then as item names that may
// themselves hold commas, so whatever Format writes parses back). Spaces
// around values are ignored.
//
// The error names the control and the value and says why: "Master
// Playback Volume: 140 is past the maximum 87".
func (c Control) Parse(s string) (alsa.Value, error) {
	v := alsa.Value{Type: c.Type}
	if c.Channels < 1 {
		return v, fmt.Errorf("%s: the control has no channels", c)
	}
	one, err := c.parseOne(s)
	if err == nil {
		v.Ints = slices.Repeat([]int64{one}, c.Channels)
		return v, nil
	}
	if !strings.Contains(s, ",") {
		return v, err
	}
	if c.Type == alsa.TypeEnumerated {
		if ints, ok := c.enumList(s); ok {
			v.Ints = ints
			return v, nil
		}
	}
	parts := strings.Split(s, ",")
	if len(parts) != c.Channels {
		return v, fmt.Errorf("%s: %q holds %d values; the control has %d channel(s): give one value, or one per channel", c, s, len(parts), c.Channels)
	}
	for _, p := range parts {
		x, err := c.parseOne(p)
		if err != nil {
			return alsa.Value{Type: c.Type}, err
		}
		v.Ints = append(v.Ints, x)
	}
	return v, nil
}

// ParseIntOrString reads spec.controls' value type: a string as Parse
// does, an int as its decimal spelling (so 50 is the integer 50, 1 a
// switch's "on", and 2 the item named "2").
func (c Control) ParseIntOrString(v intstr.IntOrString) (alsa.Value, error) {
	if v.Type == intstr.Int {
		return c.Parse(strconv.FormatInt(int64(v.IntVal), 10))
	}
	return c.Parse(v.StrVal)
}

// enumList reads s as exactly Channels item names joined by commas,
// where item names may hold commas themselves ("B,C,A" over items "A" and
// "B,C" is "B,C" then "A"): a search over where each item ends, which
// remembers the (offset, channels left) pairs that failed, so it stays
// linear in len(s) × Channels × items whatever the names.
func (c Control) enumList(s string) ([]int64, bool) {
	type state struct{ at, left int }
	failed := map[state]bool{}
	out := make([]int64, 0, c.Channels)
	var match func(at, left int) bool
	match = func(at, left int) bool {
		if failed[state{at, left}] {
			return false
		}
		rest := strings.TrimLeft(s[at:], " ")
		start := len(s) - len(rest) // where the item starts in s
		for i, item := range c.Items {
			if item == "" || !strings.HasPrefix(rest, item) {
				continue
			}
			end := start + len(item)
			after := strings.TrimLeft(s[end:], " ")
			out = append(out, int64(i))
			if left == 1 && after == "" {
				return true
			}
			if left > 1 && strings.HasPrefix(after, ",") && match(len(s)-len(after)+1, left-1) {
				return true
			}
			out = out[:len(out)-1]
		}
		failed[state{at, left}] = true
		return false
	}
	if c.Channels < 1 || !match(0, c.Channels) {
		return nil, false
	}
	return out, true
}

// parseOne reads one channel's value.
func (c Control) parseOne(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%s: an empty value", c)
	}
	switch c.Type {
	case alsa.TypeBoolean:
		switch strings.ToLower(s) {
		case "on", "true", "1":
			return 1, nil
		case "off", "false", "0":
			return 0, nil
		}
		return 0, fmt.Errorf("%s: %q is neither on nor off", c, s)
	case alsa.TypeEnumerated:
		if i := slices.Index(c.Items, s); i >= 0 {
			return int64(i), nil
		}
		quoted := make([]string, len(c.Items))
		for i, item := range c.Items {
			quoted[i] = strconv.Quote(item)
		}
		return 0, fmt.Errorf("%s: %q is not one of its items %s", c, s, strings.Join(quoted, ", "))
	case alsa.TypeInteger, alsa.TypeInteger64:
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not an integer in %d..%d", c, s, c.Min, c.Max)
		}
		return x, c.checkInt(x)
	}
	return 0, fmt.Errorf("%s: a %s element is not a mixer control this package sets", c, c.Type)
}

// checkInt refuses an integer outside the control's range or steps.
func (c Control) checkInt(x int64) error {
	switch {
	case x < c.Min:
		return fmt.Errorf("%s: %d is below the minimum %d", c, x, c.Min)
	case x > c.Max:
		return fmt.Errorf("%s: %d is past the maximum %d", c, x, c.Max)
	case c.Step > 1 && (uint64(x)-uint64(c.Min))%uint64(c.Step) != 0:
		return fmt.Errorf("%s: %d is not a whole number of steps of %d above the minimum %d", c, x, c.Step, c.Min)
	}
	return nil
}

// check refuses a value the control would not take: another type or
// channel count, an integer out of range, a boolean not 0 or 1, an item
// the control does not have.
func (c Control) check(v alsa.Value) error {
	if v.Type != c.Type {
		return fmt.Errorf("%s: a %s value for a %s control", c, v.Type, c.Type)
	}
	if len(v.Ints) != c.Channels {
		return fmt.Errorf("%s: %d values for %d channel(s)", c, len(v.Ints), c.Channels)
	}
	for _, x := range v.Ints {
		switch c.Type {
		case alsa.TypeBoolean:
			if x != 0 && x != 1 {
				return fmt.Errorf("%s: %d is neither 0 (off) nor 1 (on)", c, x)
			}
		case alsa.TypeEnumerated:
			if x < 0 || x >= int64(len(c.Items)) {
				return fmt.Errorf("%s: item %d of %d items", c, x, len(c.Items))
			}
		case alsa.TypeInteger, alsa.TypeInteger64:
			if err := c.checkInt(x); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: a %s element is not a mixer control this package sets", c, c.Type)
		}
	}
	return nil
}
