// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

func newListCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the Sinks and Sources to capture, with their node, monitor, state and claim",
		Long: "Lists the Sinks and Sources. CLAIM names the ResourceClaims (namespace/name) whose allocation holds\n" +
			"the endpoint's audio.liken.sh device; without list on ResourceClaims it shows the claim the operator\n" +
			"has prepared on the node, and a note says so.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, note, err := o.endpoints(cmd.Context())
			if err != nil {
				return err
			}
			if err := printEndpoints(o.Out, o.ErrOut, rows); err != nil {
				return err
			}
			if note != "" {
				fmt.Fprintln(o.ErrOut, note)
			}
			return nil
		},
	}
}

// stateNotServed is the state of a Sink or Source no operator has
// written a status for, or whose node's operator marked it NotServed.
const stateNotServed = "NotServed"

// notServedNote explains stateNotServed, on stderr, below a list that
// has such a row.
const notServedNote = "NotServed: no audio operator has an output or input of that name. " +
	"The operator of each node names what it finds (<node>-<card's bus place>-<PCM id>, or a Bluetooth speaker's address) " +
	"and writes its status, so a Sink or Source created by hand under another name is served by none: " +
	"check the name against the served ones above, or whether that node's audio-operator pod runs (kubectl -n liken-system get pods -o wide)."

// printEndpoints writes list's table to out, and to errOut the note on
// NotServed rows when there are any.
func printEndpoints(out, errOut io.Writer, rows []endpoint) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "KIND\tNAME\tNODE\tMONITOR\tSTATE\tCLAIM")
	unserved := false
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.kind, r.name, none(r.node), none(r.monitor), r.state, none(r.claim))
		unserved = unserved || r.state == stateNotServed
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if unserved {
		fmt.Fprintln(errOut, notServedNote)
	}
	return nil
}

// endpoint is one row of list.
type endpoint struct {
	kind, name, node, monitor, state, claim string
}

// none is s, or kubectl's <none> for an empty cell.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func (o *Options) dynamic() (dynamic.Interface, error) {
	rc, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(rc)
}

// endpoints lists every Sink, then every Source, each by name, with the
// claims that hold each; note says why only the operator's claim is
// shown when the claims cannot be listed.
func (o *Options) endpoints(ctx context.Context) (rows []endpoint, note string, err error) {
	dyn, err := o.dynamic()
	if err != nil {
		return nil, "", err
	}
	for _, k := range []struct {
		kind string
		list func() (*unstructured.UnstructuredList, error)
	}{
		{"Sink", func() (*unstructured.UnstructuredList, error) {
			return dyn.Resource(audiov1.SinksResource).List(ctx, metav1.ListOptions{})
		}},
		{"Source", func() (*unstructured.UnstructuredList, error) {
			return dyn.Resource(audiov1.SourcesResource).List(ctx, metav1.ListOptions{})
		}},
	} {
		list, err := k.list()
		if err != nil {
			return nil, "", fmt.Errorf("listing %ss: %w", k.kind, err)
		}
		for _, it := range list.Items {
			rows = append(rows, row(k.kind, &it))
		}
	}
	held, err := allocated(ctx, dyn)
	if err != nil {
		// Who may list Sinks need not list every namespace's claims:
		// CLAIM then shows the claim the operator prepared, and says so.
		note = "CLAIM shows only the claims prepared on a node: " + err.Error()
	}
	for i, r := range rows {
		refs := held[r.node+"/"+r.name]
		if r.claim != "" && !slices.Contains(refs, r.claim) {
			refs = append(refs, r.claim)
		}
		slices.Sort(refs)
		rows[i].claim = strings.Join(refs, ",")
	}
	return rows, note, nil
}

// audioDriver is the audio operator's DRA driver: its pool is the node,
// and its device names are the Sink and Source names
// (deploy/audio/operator.yaml).
const audioDriver = "audio.liken.sh"

// allocated maps "<pool>/<device>" of each audio.liken.sh device that an
// allocated ResourceClaim holds to those claims (namespace/name), from
// every namespace's ResourceClaims. Errors: the list was refused.
func allocated(ctx context.Context, dyn dynamic.Interface) (map[string][]string, error) {
	u, err := dyn.Resource(resourceapi.SchemeGroupVersion.WithResource("resourceclaims")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	var claims resourceapi.ResourceClaimList
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &claims); err != nil {
		return nil, fmt.Errorf("reading ResourceClaims: %w", err)
	}
	return allocations(claims.Items), nil
}

// allocations maps "<pool>/<device>" of each audio.liken.sh device that
// an allocated claim of claims holds to those claims (namespace/name, in
// list order).
func allocations(claims []resourceapi.ResourceClaim) map[string][]string {
	out := map[string][]string{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		ref := c.Namespace + "/" + c.Name
		for _, r := range c.Status.Allocation.Devices.Results {
			k := r.Pool + "/" + r.Device
			if r.Driver == audioDriver && !slices.Contains(out[k], ref) {
				out[k] = append(out[k], ref)
			}
		}
	}
	return out
}

func row(kind string, u *unstructured.Unstructured) endpoint {
	s := func(path ...string) string {
		v, _, _ := unstructured.NestedString(u.Object, append([]string{"status"}, path...)...)
		return v
	}
	e := endpoint{kind: kind, name: u.GetName(), node: s("node")}
	if m := s("monitor", "name"); m != "" {
		e.monitor = m
	} else if p := s("monitor", "product"); p != "" {
		e.monitor = p
	}
	if ns, n := s("claim", "namespace"), s("claim", "name"); n != "" {
		e.claim = ns + "/" + n
	}
	e.state = state(u)
	if e.node == "" || reason(u, audiov1.ConditionConnected) == audiov1.ReasonNotServed {
		// Every operator writes status.node first of all (the API
		// server's admission policy lets it write no other status);
		// the operator of the node a hand-made object's name is of
		// writes it with Connected NotServed.
		e.state = stateNotServed
	}
	return e
}

// reason is the reason of u's condition typ, or "".
func reason(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}

// state reads the Connected and Ready conditions as one word.
func state(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	st := map[string]string{}
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		v, _ := m["status"].(string)
		st[t] = v
	}
	switch {
	case st[audiov1.ConditionConnected] == "False":
		return "Disconnected"
	case st[audiov1.ConditionReady] == "True":
		return "Ready"
	case st[audiov1.ConditionReady] == "False":
		return "NotReady"
	}
	return "Unknown"
}

// completeNames lists the names of Sinks (or Sources) for shell
// completion; a failure completes nothing.
func (o *Options) completeNames(ctx context.Context, sources bool) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	dyn, err := o.dynamic()
	if err != nil {
		return nil
	}
	gvr := audiov1.SinksResource
	if sources {
		gvr = audiov1.SourcesResource
	}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.GetName())
	}
	return names
}
