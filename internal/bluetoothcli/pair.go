// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

// pollInterval is how often pair reads its request back.
const pollInterval = 500 * time.Millisecond

type pairOptions struct {
	adapter, node, device, pin string
	window                     time.Duration
	keep                       bool
}

func newPair(e *env) *cobra.Command {
	var o pairOptions
	cmd := &cobra.Command{
		Use:   "pair [--adapter ADAPTER] [--node NODE] [--device MAC]",
		Short: "Open a pairing window, pick a device that answers, and wait until it is paired",
		Long: "Creates a PairingRequest for the adapter (the only one there is, or the one on --node, or\n" +
			"--adapter; given both, the adapter must be on that node). Put the device in pairing mode: the\n" +
			"devices that answer appear in a table; type the number or address of yours (or give --device in\n" +
			"advance). A keyboard gets a passkey to type, a phone a number to compare, an old device is asked\n" +
			"for its PIN. The command ends when the device is Paired (exit 0) or the request Failed or\n" +
			"Expired (exit 1).\n\n" +
			"A --device that is paired already (its Peripheral holds a bond) is refused: a new window would\n" +
			"not replace the bond. To pair it anew, unpair it first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range []string{"device", "adapter", "node", "pin"} {
				if cmd.Flags().Changed(name) && cmd.Flags().Lookup(name).Value.String() == "" {
					return fmt.Errorf("--%s is empty: leave it out, or give a value", name)
				}
			}
			return e.pair(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.adapter, "adapter", "", "the Adapter to pair with (its name, or its address with colons)")
	f.StringVar(&o.node, "node", "", "use the adapter on this node; with --adapter, check that the adapter is on it")
	f.StringVar(&o.device, "device", "", "pair this device (XX:XX:XX:XX:XX:XX) as soon as it answers, without asking; refused when it is paired already")
	f.StringVar(&o.pin, "pin", "", "the PIN a legacy device asks for (often 0000)")
	f.DurationVar(&o.window, "window", 180*time.Second, "how long the adapter stays discoverable, "+windowRange)
	f.BoolVar(&o.keep, "keep", false, "leave the request in place when the command is interrupted (by default it is deleted)")
	return cmd
}

// windowRange is the span spec.windowSeconds accepts, spelt the same in
// the --window help and in its error: "15s to 15m".
var windowRange = shortDuration(btv1.MinWindowSeconds*time.Second) + " to " + shortDuration(btv1.MaxWindowSeconds*time.Second)

// shortDuration is d as time.Duration.String spells it, less the zero
// units it appends after the largest one: 15m, not 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// pinRE is what spec.pin accepts (the CRD's pattern): checked here too,
// so that a bad value is refused before anything is created.
var pinRE = regexp.MustCompile(`^[ -~]{1,16}$`)

// pair is the whole pair command.
func (e *env) pair(ctx context.Context, o pairOptions) error {
	if o.window < btv1.MinWindowSeconds*time.Second || o.window > btv1.MaxWindowSeconds*time.Second {
		return fmt.Errorf("--window %v is outside %s", o.window, windowRange)
	}
	if o.pin != "" && !pinRE.MatchString(o.pin) {
		return fmt.Errorf("--pin %s is not 1 to 16 printable ASCII characters", quote(o.pin))
	}
	device := ""
	var addr bdaddr.Address
	if o.device != "" {
		a, err := bdaddr.Parse(o.device)
		if err != nil {
			return fmt.Errorf("--device %s is not a Bluetooth address (XX:XX:XX:XX:XX:XX)", quote(o.device))
		}
		device, addr = a.String(), a
	}
	d, ns, err := e.client()
	if err != nil {
		return err
	}
	if device != "" {
		if err := checkNotPaired(ctx, d, e.streams.ErrOut, addr); err != nil {
			return err
		}
	}
	adapter, err := chooseAdapter(ctx, d, e.streams.ErrOut, o.adapter, o.node, adapterWait)
	if err != nil {
		return err
	}
	req := &btv1.PairingRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pair-", Namespace: ns},
		Spec:       btv1.PairingRequestSpec{Adapter: adapter, WindowSeconds: int32(o.window / time.Second), Device: device, PIN: o.pin},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(req)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(btv1.GroupVersion.String())
	u.SetKind("PairingRequest")
	res := d.Resource(btv1.PairingRequestsResource).Namespace(ns)
	created, err := res.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the PairingRequest: %w", err)
	}
	name := created.GetName()
	fmt.Fprintf(e.streams.ErrOut, "pairingrequest %s/%s: asking the operator of adapter %s for a %v pairing window\n", ns, name, adapter, o.window)
	s := &session{e: e, res: res, name: name, device: device, adapter: adapter, lines: readLines(e.streams.In)}
	s.tty = isTerminal(e.streams.Out)
	err = s.run(ctx)
	if ctx.Err() != nil && !o.keep {
		// Interrupted: the window should not stay open for nobody.
		_ = res.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		return errors.New("interrupted; the request was deleted")
	}
	if err != nil && !o.keep && !s.finished {
		// Refused before it ran (no such adapter, or its radio is on no
		// node): nothing is left waiting for a radio that may come later.
		if derr := res.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}); derr == nil {
			return fmt.Errorf("%w; the request was deleted", err)
		}
	}
	return err
}

// adapterWait bounds how long pair waits for the operator to report an
// Adapter it has created but not yet written a status for.
const adapterWait = 30 * time.Second

// chooseAdapter returns the Adapter name to pair with. An Adapter whose
// status is still empty (the operator created it and has not reported
// its node and presence yet, as right after an install) is waited for,
// up to wait, saying so once on progress. Given both adapter and node,
// the adapter must be on that node (checkAdapterNode).
func chooseAdapter(ctx context.Context, d dynamic.Interface, progress io.Writer, adapter, node string, wait time.Duration) (string, error) {
	if adapter != "" {
		a, err := bdaddr.Parse(adapter)
		if err != nil {
			return "", fmt.Errorf("--adapter %s is neither an Adapter name nor an address", quote(adapter))
		}
		if node != "" {
			if err := checkAdapterNode(ctx, d, a.Key(), node); err != nil {
				return "", err
			}
		}
		return a.Key(), nil
	}
	deadline := time.Now().Add(wait)
	announced := map[string]bool{}
	for {
		name, starting, err := pickAdapter(ctx, d, node)
		if err == nil || len(starting) == 0 || !time.Now().Before(deadline) {
			return name, err
		}
		for _, s := range starting {
			if !announced[s] {
				announced[s] = true
				fmt.Fprintf(progress, "waiting for the operator to report adapter %s\n", s)
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// pickAdapter is one pass of chooseAdapter: the adapter to use, or an
// error and the Adapters whose status is still empty (starting).
func pickAdapter(ctx context.Context, d dynamic.Interface, node string) (string, []string, error) {
	l, err := d.Resource(btv1.AdaptersResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return "", nil, fmt.Errorf("you may not list Adapters, so give --adapter (ask for the bluetooth-viewer role to choose by --node): %w", err)
		}
		return "", nil, fmt.Errorf("listing Adapters: %w", err)
	}
	var list btv1.AdapterList
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.UnstructuredContent(), &list); err != nil {
		return "", nil, err
	}
	var fit, all, starting []string
	for _, a := range list.Items {
		if c := meta.FindStatusCondition(a.Status.Conditions, btv1.ConditionPresent); a.Status.Node == "" && c != nil && c.Reason == btv1.ReasonNotServed {
			all = append(all, a.Name+" (no operator has its radio)")
		} else if a.Status.Node == "" && len(a.Status.Conditions) == 0 {
			all = append(all, a.Name+" (starting)")
			starting = append(starting, a.Name)
		} else {
			all = append(all, fmt.Sprintf("%s (node %s)", a.Name, a.Status.Node))
		}
		if node != "" && a.Status.Node != node {
			continue
		}
		if c := meta.FindStatusCondition(a.Status.Conditions, btv1.ConditionPresent); c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		fit = append(fit, a.Name)
	}
	switch {
	case len(fit) == 1:
		return fit[0], nil, nil
	case len(all) == 0:
		return "", nil, errors.New("there is no Adapter: is the bluetooth operator running on a node with a radio?")
	case len(fit) == 0 && node != "":
		return "", starting, fmt.Errorf("no present adapter on node %s; the adapters are: %s", quote(node), strings.Join(all, ", "))
	case len(fit) == 0:
		return "", starting, fmt.Errorf("no adapter is present; the adapters are: %s", strings.Join(all, ", "))
	}
	return "", nil, fmt.Errorf("there are %d adapters; choose one with --adapter or --node: %s", len(fit), strings.Join(all, ", "))
}

// session follows one request until it finishes.
type session struct {
	e      *env
	res    dynamic.ResourceInterface
	name   string
	device string // approved
	tty    bool
	lines  <-chan string

	shownSeen  int
	shownTable string
	prompted   string // the prompt last shown
	last       string // the last condition message shown
	adapter    string
	announced  bool   // the open window was announced
	shut       string // the message of the closed window last shown
	finished   bool   // the request reached a final phase
}

func (s *session) run(ctx context.Context) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var cur *btv1.PairingRequest
	for {
		u, err := s.res.Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("pairingrequest %s was deleted", s.name)
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			fmt.Fprintf(s.e.streams.ErrOut, "reading the request: %v\n", err)
		default:
			cur = &btv1.PairingRequest{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cur); err != nil {
				return err
			}
			if done, err := s.show(cur); done {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case line, ok := <-s.lines:
			if !ok {
				s.lines = nil
				continue
			}
			if cur != nil {
				if err := s.answer(ctx, cur, strings.TrimSpace(line)); err != nil {
					fmt.Fprintln(s.e.streams.ErrOut, err)
				}
			}
		}
	}
}

// show prints what changed; done is true when the request finished.
func (s *session) show(r *btv1.PairingRequest) (done bool, err error) {
	out := s.e.streams.Out
	accepted := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionAccepted)
	if accepted != nil && accepted.Status == metav1.ConditionFalse && r.Status.Phase == "" {
		return true, fmt.Errorf("%s: %s", accepted.Reason, accepted.Message)
	}
	if r.Status.Phase.Finished() {
		s.finished = true
	}
	switch w := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionWindowOpen); {
	case w == nil:
	case w.Status == metav1.ConditionTrue && !s.announced:
		s.announced = true
		fmt.Fprintf(s.e.streams.ErrOut, "the adapter %s is discoverable now (%s); put the device in pairing mode\n", s.adapter, w.Message)
	case w.Status == metav1.ConditionFalse && w.Reason != btv1.ReasonClosed && w.Message != s.shut:
		// A window the radio does not hold (powered off, refused):
		// said once, since the request waits for nothing a device can do.
		s.shut = w.Message
		fmt.Fprintf(s.e.streams.ErrOut, "the adapter %s is not discoverable: %s: %s\n", s.adapter, w.Reason, w.Message)
	}
	switch r.Status.Phase {
	case btv1.PhasePaired:
		if c := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionPaired); c != nil && c.Reason == btv1.ReasonAlreadyPaired {
			// The device was paired before this request: nothing new was
			// paired, and the bond it had is the one kept.
			fmt.Fprintf(out, "Paired: peripheral %s (it was paired already; its bond is unchanged)\n", r.Status.Peripheral)
			return true, nil
		}
		fmt.Fprintf(out, "Paired: peripheral %s\n", r.Status.Peripheral)
		return true, nil
	case btv1.PhaseFailed, btv1.PhaseExpired:
		return true, errors.New(finishedMessage(r))
	}
	if s.device == "" {
		s.table(r)
	}
	paired := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionPaired)
	if paired == nil {
		return false, nil
	}
	prompt := ""
	switch paired.Reason {
	case btv1.ReasonAwaitingPasskey:
		if pk := r.Status.Passkey; pk != nil {
			prompt = fmt.Sprintf("Type %s on the device, then Enter.", pk.Value)
		}
	case btv1.ReasonAwaitingConfirmation:
		if pk := r.Status.Passkey; pk != nil {
			prompt = fmt.Sprintf("Does the device show %s? [y/n] ", pk.Value)
		}
	case btv1.ReasonAwaitingPIN:
		prompt = "The device asks for a PIN (or the number it shows): "
	case btv1.ReasonAwaitingApproval:
		if s.shownSeen > 0 {
			prompt = "Type the number or address of the device to pair: "
		}
	}
	if prompt != "" && prompt != s.prompted {
		s.prompted = prompt
		fmt.Fprintln(out, prompt)
	} else if prompt == "" && paired.Message != s.last && paired.Reason != btv1.ReasonAwaitingApproval {
		s.last = paired.Message
		fmt.Fprintln(s.e.streams.ErrOut, paired.Message)
	}
	return false, nil
}

// finishedMessage is how a Failed or Expired request reads: its phase,
// then the reason and message of its Paired condition, which the
// operator sets to why it ended ("Failed: PairingFailed: pairing with
// E4:17:D8:C5:67:6D failed: BlueZ answered
// org.bluez.Error.AuthenticationFailed"). A request with no such
// condition (an operator that wrote only the phase) falls back to the
// Accepted condition, then to the phase alone.
func finishedMessage(r *btv1.PairingRequest) string {
	msg := string(r.Status.Phase)
	c := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionPaired)
	if c == nil || c.Reason == "" && c.Message == "" {
		c = meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionAccepted)
	}
	if c == nil {
		return msg
	}
	for i, part := range []string{c.Reason, c.Message} {
		// A reason that repeats the phase (Expired: Expired) is said once.
		if part != "" && (i > 0 || part != msg) {
			msg += ": " + part
		}
	}
	return msg
}

// table prints the devices that answered: redrawn in place on a
// terminal, new rows only otherwise.
func (s *session) table(r *btv1.PairingRequest) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "#\tADDRESS\tNAME\tKIND\tRSSI")
	for i, d := range r.Status.Seen {
		rssi := "-"
		if d.RSSI != nil {
			rssi = fmt.Sprintf("%d dBm", *d.RSSI)
		}
		name := d.Name
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", i+1, d.Address, name, d.Icon, rssi)
	}
	_ = w.Flush()
	text := b.String()
	if text == s.shownTable || len(r.Status.Seen) == 0 {
		return
	}
	if s.tty {
		if s.shownTable != "" {
			// Move up over the last table and redraw it.
			fmt.Fprintf(s.e.streams.Out, "\x1b[%dA\x1b[J", strings.Count(s.shownTable, "\n")+1)
		}
		fmt.Fprint(s.e.streams.Out, text)
		fmt.Fprintln(s.e.streams.Out, "Type the number or address of the device to pair:")
		s.prompted = "table"
	} else {
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		start := 0
		if s.shownTable != "" {
			start = s.shownSeen + 1
		}
		for _, l := range lines[min(start, len(lines)):] {
			fmt.Fprintln(s.e.streams.Out, l)
		}
	}
	s.shownTable, s.shownSeen = text, len(r.Status.Seen)
}

// answer applies one line the person typed.
func (s *session) answer(ctx context.Context, r *btv1.PairingRequest, line string) error {
	if line == "" {
		return nil
	}
	paired := meta.FindStatusCondition(r.Status.Conditions, btv1.ConditionPaired)
	reason := ""
	if paired != nil {
		reason = paired.Reason
	}
	switch {
	case reason == btv1.ReasonAwaitingConfirmation:
		yes := strings.HasPrefix(strings.ToLower(line), "y")
		return s.patch(ctx, map[string]any{"passkeyConfirmed": yes})
	case reason == btv1.ReasonAwaitingPIN:
		if !pinRE.MatchString(line) {
			return fmt.Errorf("%s is not a PIN: 1 to 16 printable ASCII characters", quote(line))
		}
		return s.patch(ctx, map[string]any{"pin": line})
	case s.device == "":
		addr := line
		if n, err := strconv.Atoi(line); err == nil {
			if n < 1 || n > len(r.Status.Seen) {
				return fmt.Errorf("%d is not a row of the table (1 to %d)", n, len(r.Status.Seen))
			}
			addr = r.Status.Seen[n-1].Address
		}
		a, err := bdaddr.Parse(addr)
		if err != nil {
			return fmt.Errorf("%s is neither a row number nor an address", quote(line))
		}
		s.device = a.String()
		fmt.Fprintf(s.e.streams.ErrOut, "pairing with %s\n", s.device)
		return s.patch(ctx, map[string]any{"device": s.device})
	}
	return nil
}

func (s *session) patch(ctx context.Context, spec map[string]any) error {
	data, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = s.res.Patch(ctx, s.name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}

// readLines delivers in's lines until it ends.
func readLines(in io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		if in == nil {
			return
		}
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
