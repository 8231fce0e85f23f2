// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// audioOperator is how the audio operator's pod on node authenticates:
// its ServiceAccount, with the node its token was issued on in the extra.
func audioOperator(node string) []string {
	return []string{
		"--as=system:serviceaccount:" + namespace + ":audio-operator",
		"--as-user-extra=" + nodeExtra + "=" + node,
	}
}

// checkAudioResources runs once the audio base is applied: the Sink and
// Source CRDs are served, the operator's ServiceAccount can do with them
// what the operator does and no more, the schema refuses bad specs by
// field, and kubectl prints the columns a person reads.
func checkAudioResources(t *testing.T, c *harness.Cluster, k *kube) {
	ctx := t.Context()
	if out, err := k.run(ctx, nil, "wait", "--for=condition=Established", "--timeout=30s",
		"crd/sinks.audio.liken.sh", "crd/sources.audio.liken.sh"); err != nil {
		t.Fatalf("CRDs never established: %v", err)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	t.Run("operator", func(t *testing.T) { checkOperatorAccess(t, c, k) })
	t.Run("verbs", func(t *testing.T) { checkAudioVerbs(t, k) })
	t.Run("schema", func(t *testing.T) { checkSinkSchema(t, k) })
	t.Run("columns", func(t *testing.T) { checkColumns(t, k) })
	t.Run("api", func(t *testing.T) { checkAPIAccess(t, k) })
}

// checkAPIAccess asks the authorizer what audio-api's ServiceAccount, the
// audio operator's and a person bound to audio-capture-viewer may do:
// exactly what each needs.
func checkAPIAccess(t *testing.T, k *kube) {
	ctx := t.Context()
	api := "--as=system:serviceaccount:" + namespace + ":audio-api"
	op := "--as=system:serviceaccount:" + namespace + ":audio-operator"
	cases := []struct {
		as   string
		args []string
		want bool
	}{
		{api, []string{"create", "tokenreviews.authentication.k8s.io"}, true},
		{api, []string{"create", "subjectaccessreviews.authorization.k8s.io"}, true},
		{api, []string{"get", "sinks.audio.liken.sh/kitchen"}, true},
		{api, []string{"get", "sources.audio.liken.sh/mic"}, true},
		{api, []string{"list", "sinks.audio.liken.sh"}, false},
		{api, []string{"watch", "sinks.audio.liken.sh"}, true},
		{api, []string{"update", "sinks.audio.liken.sh/kitchen"}, false},
		{api, []string{"create", "events", "-n", "default"}, true},
		{api, []string{"get", "secrets/audio-api-tls", "-n", namespace}, true},
		{api, []string{"update", "secrets/audio-api-tls", "-n", namespace}, true},
		{api, []string{"watch", "secrets/audio-capture-server", "-n", namespace}, true},
		{api, []string{"update", "secrets/audio-capture-server", "-n", namespace}, true},
		{api, []string{"create", "secrets", "-n", namespace}, true},
		{api, []string{"get", "secrets/bond-aa-bb", "-n", namespace}, false},
		{api, []string{"list", "secrets", "-n", namespace}, false},
		{api, []string{"delete", "secrets/audio-api-tls", "-n", namespace}, false},
		{api, []string{"create", "secrets", "-n", "default"}, false},
		{api, []string{"get", "configmaps/audio-api-ca", "-n", namespace}, true},
		{api, []string{"update", "configmaps/audio-api-ca", "-n", namespace}, true},
		{api, []string{"get", "configmaps/other", "-n", namespace}, false},
		{api, []string{"watch", "configmaps/extension-apiserver-authentication", "-n", "kube-system"}, true},
		{api, []string{"get", "configmaps/kubeadm-config", "-n", "kube-system"}, false},
		{api, []string{"list", "pods", "-n", namespace}, true},
		{api, []string{"list", "pods", "-n", "default"}, false},
		{api, []string{"create", "pods", "--subresource=portforward", "-n", namespace}, false},
		{op, []string{"create", "tokenreviews.authentication.k8s.io"}, true},
		{op, []string{"create", "subjectaccessreviews.authorization.k8s.io"}, false},
		{"--as=alice", []string{"get", "sinks.audio.liken.sh/kitchen", "--subresource=audio"}, false},
	}
	for _, c := range cases {
		out, err := k.run(ctx, nil, append([]string{"auth", "can-i", c.as}, c.args...)...)
		got := strings.TrimSpace(out)
		if (got != "yes" && got != "no") || (err == nil) != (got == "yes") {
			t.Fatalf("can-i %s %v: %q, %v", c.as, c.args, got, err)
		}
		if want := map[bool]string{true: "yes", false: "no"}[c.want]; got != want {
			t.Errorf("can-i %s %v: %s, want %s", c.as, c.args, got, want)
		}
	}

	// The grant docs/capture.md tells a cluster owner to make.
	if _, err := k.run(ctx, nil, "create", "clusterrolebinding", "alice-listens", "--clusterrole=audio-capture-viewer", "--user=alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.run(ctx, nil, "-n", namespace, "create", "rolebinding", "alice-listens", "--role=audio-capture-client", "--user=alice"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "sinks.audio.liken.sh/kitchen", "--subresource=audio"}, "yes"},
		{[]string{"get", "sources.audio.liken.sh/mic", "--subresource=audio"}, "yes"},
		{[]string{"list", "sinks.audio.liken.sh"}, "yes"},
		{[]string{"get", "sinks.audio.liken.sh/kitchen", "--subresource=status"}, "no"},
		{[]string{"update", "sinks.audio.liken.sh/kitchen"}, "no"},
		{[]string{"get", "configmaps/audio-api-ca", "-n", namespace}, "yes"},
		{[]string{"create", "pods", "--subresource=portforward", "-n", namespace}, "yes"},
		{[]string{"create", "pods", "--subresource=portforward", "-n", "default"}, "no"},
		{[]string{"get", "secrets/audio-api-tls", "-n", namespace}, "no"},
	} {
		out, _ := k.run(ctx, nil, append([]string{"auth", "can-i", "--as=alice"}, c.args...)...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("alice, bound to audio-capture-viewer: can-i %v: %s, want %s", c.args, got, c.want)
		}
	}
}

// endpointJSON is a Sink or Source (kind) named name, with spec unless
// it is nil.
func endpointJSON(t *testing.T, kind, name string, spec map[string]any) string {
	t.Helper()
	obj := map[string]any{
		"apiVersion": audiov1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// statusPatch is a merge patch of the status subresource that sets the
// fields in status.
func statusPatch(t *testing.T, status map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// condition is a metav1.Condition as JSON, with every field the schema
// requires.
func condition(typ, status, reason string) map[string]any {
	return map[string]any{
		"type":               typ,
		"status":             status,
		"reason":             reason,
		"message":            "",
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}
}

// checkOperatorAccess acts as the operator's pod on node-a: it creates a
// Sink and a Source, writes their status through both verbs of the status
// subresource, gets them, lists and watches only its own node's Sinks by
// the status.node selectable field, and records Events about them in
// default. It cannot delete a Sink or write its spec.
func checkOperatorAccess(t *testing.T, c *harness.Cluster, k *kube) {
	ctx := t.Context()
	onA, onB := audioOperator("node-a"), audioOperator("node-b")
	must := func(as []string, stdin string, args ...string) string {
		t.Helper()
		out, err := k.runAs(ctx, as, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	must(onA, endpointJSON(t, "Sink", "node-a-hdmi-0", nil), "create", "-f", "-")
	must(onA, endpointJSON(t, "Source", "node-a-mic", nil), "create", "-f", "-")
	must(onB, endpointJSON(t, "Sink", "node-b-hdmi-0", nil), "create", "-f", "-")

	// patch on the status subresource, as a merge patch.
	must(onA, "", "patch", "sink", "node-a-hdmi-0", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"node": "node-a", "connectionType": "hdmi"}))
	must(onA, "", "patch", "source", "node-a-mic", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"node": "node-a", "connectionType": "analog"}))
	must(onB, "", "patch", "sink", "node-b-hdmi-0", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"node": "node-b", "connectionType": "hdmi"}))

	// update on the status subresource: get, change, replace, which is a
	// PUT carrying the resourceVersion it read.
	var sink map[string]any
	if err := json.Unmarshal([]byte(must(onA, "", "get", "sink", "node-a-hdmi-0", "-o", "json")), &sink); err != nil {
		t.Fatal(err)
	}
	status, ok := sink["status"].(map[string]any)
	if !ok {
		t.Fatalf("node-a-hdmi-0 read back with no status after its status patch: %v", sink)
	}
	status["nodeName"] = "alsa_output.node-a-hdmi-0"
	data, _ := json.Marshal(sink)
	must(onA, string(data), "replace", "--subresource=status", "-f", "-")
	if got := must(onA, "", "get", "sink", "node-a-hdmi-0", "-o", "jsonpath={.status.nodeName}"); got != "alsa_output.node-a-hdmi-0" {
		t.Errorf("status.nodeName after the status update = %q", got)
	}

	// The field selector returns node-a's Sinks and not node-b's, which the
	// unfiltered list does hold.
	all := strings.Fields(must(nil, "", "get", "sinks", "-o", "name"))
	own := strings.Fields(must(onA, "", "get", "sinks", "--field-selector", "status.node=node-a", "-o", "name"))
	if !slices.Contains(all, "sink.audio.liken.sh/node-b-hdmi-0") {
		t.Errorf("unfiltered list %v lacks node-b's Sink", all)
	}
	if want := []string{"sink.audio.liken.sh/node-a-hdmi-0"}; !slices.Equal(own, want) {
		t.Errorf("Sinks with status.node=node-a: %v, want %v", own, want)
	}
	if own := strings.Fields(must(onA, "", "get", "sources", "--field-selector", "status.node=node-a", "-o", "name")); !slices.Equal(own, []string{"source.audio.liken.sh/node-a-mic"}) {
		t.Errorf("Sources with status.node=node-a: %v", own)
	}

	checkWatch(t, k, onA, onB)

	// Events about cluster-scoped objects go to default, through either
	// events API; a recorder that sees the same event again patches it.
	must(onA, fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"node-a-hdmi-0.layout","namespace":"default"},
		"involvedObject":{"apiVersion":%q,"kind":"Sink","name":"node-a-hdmi-0"},
		"reason":"LayoutChanged","message":"FL,FR to FL,FR,FC,LFE,RL,RR (Spec)","type":"Normal","count":1,
		"source":{"component":"audio-operator","host":"node-a"}}`, audiov1.GroupVersion.String()),
		"create", "-f", "-")
	// kubectl patch reads the object first, which the operator may not;
	// client-go's recorder patches without a read, as this does.
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":audio-operator",
		Extra:    map[string][]string{nodeExtra: {"node-a"}},
	}
	asOperator, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := asOperator.CoreV1().Events("default").Patch(ctx, "node-a-hdmi-0.layout",
		types.StrategicMergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("patching an Event in default as the operator: %v", err)
	} else if ev.Count != 2 {
		t.Errorf("patched Event has count %d, want 2", ev.Count)
	}
	if _, err := asOperator.CoreV1().Events("default").Get(ctx, "node-a-hdmi-0.layout", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading an Event as the operator: %v, want forbidden", err)
	}
	must(onA, fmt.Sprintf(`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"node-a-hdmi-0.control","namespace":"default"},
		"regarding":{"apiVersion":%q,"kind":"Sink","name":"node-a-hdmi-0"},
		"reason":"ControlSkipped","note":"no control named Bass Boost","type":"Warning","action":"SetControl",
		"reportingController":"audio.liken.sh/operator","reportingInstance":"node-a","eventTime":"2026-01-01T00:00:00.000000Z"}`,
		audiov1.GroupVersion.String()),
		"create", "-f", "-")

	refused := []struct {
		name string
		args []string
	}{
		{"deleting a Sink", []string{"delete", "sink", "node-a-hdmi-0"}},
		{"deleting a Source", []string{"delete", "source", "node-a-mic"}},
		{"writing a Sink's spec", []string{"patch", "sink", "node-a-hdmi-0", "--type=merge", "-p", `{"spec":{"volume":5}}`}},
	}
	for _, r := range refused {
		out, err := k.runAs(ctx, onA, "", r.args...)
		switch {
		case err == nil:
			t.Errorf("%s: allowed (%s), want forbidden", r.name, strings.TrimSpace(out))
		case !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden"):
			t.Errorf("%s: refused, but not by RBAC: %v", r.name, err)
		default:
			t.Logf("%s: refused: %v", r.name, err)
		}
	}
	if got := must(nil, "", "get", "sink", "node-a-hdmi-0", "-o", "jsonpath={.spec}"); got != "{}" {
		t.Errorf("node-a-hdmi-0's spec after the refused write = %s, want {}", got)
	}

	// The admission policy keeps node-a's operator to the status of
	// node-a's objects: it cannot write node-b's Sink, nor move its own to
	// node-b. The API server loads a new policy from an informer, so the
	// first refusal is waited for.
	policy := "ValidatingAdmissionPolicy 'audio-operator-own-node-endpoints'"
	for _, w := range []struct{ name, sink, node string }{
		{"writing node-b's Sink's status", "node-b-hdmi-0", "node-b"},
		{"moving its own Sink to node-b", "node-a-hdmi-0", "node-b"},
		{"taking node-b's Sink over", "node-b-hdmi-0", "node-a"},
	} {
		var last string
		err := poll(ctx, 30*time.Second, func() (bool, string) {
			_, err := k.runAs(ctx, onA, "", "patch", "sink", w.sink, "--subresource=status", "--type=merge",
				"-p", statusPatch(t, map[string]any{"node": w.node, "location": "0000:00:1f.3"}))
			if err == nil {
				return false, "allowed"
			}
			last = err.Error()
			return strings.Contains(last, policy), last
		})
		if err != nil {
			t.Errorf("%s: %v", w.name, err)
		} else {
			t.Logf("%s: refused: %s", w.name, last)
		}
	}
	if got := must(nil, "", "get", "sink", "node-b-hdmi-0", "-o", "jsonpath={.status.node}"); got != "node-b" {
		t.Errorf("node-b-hdmi-0's status.node after the refused writes = %q", got)
	}
	// Its own Sink's status it still writes.
	must(onA, "", "patch", "sink", "node-a-hdmi-0", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"node": "node-a", "location": "0000:00:1f.3"}))
}

// checkWatch watches Sinks as the operator on node-a does, selected by
// status.node=node-a, while node-b's operator writes its Sink's status
// and then node-a's operator creates a second Sink of its own: the watch
// delivers node-a's objects and never node-b's, although node-b's write
// came first.
func checkWatch(t *testing.T, k *kube, onA, onB []string) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	args := append([]string{"--kubeconfig=" + k.kubeconfig}, onA...)
	args = append(args, "get", "sinks", "--field-selector", "status.node=node-a",
		"--watch", "-o", "name")
	cmd := exec.CommandContext(ctx, k.bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- strings.TrimSpace(s.Text())
		}
	}()
	var seen []string
	waitFor := func(want string) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before %q (seen %v): %s", want, seen, stderr.String())
				}
				seen = append(seen, line)
				if line == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("watch never delivered %q (seen %v): %s", want, seen, stderr.String())
			}
		}
	}
	// The watch starts with the objects the list holds.
	waitFor("sink.audio.liken.sh/node-a-hdmi-0")

	run := func(as []string, stdin string, args ...string) {
		t.Helper()
		if _, err := k.runAs(ctx, as, stdin, args...); err != nil {
			t.Fatal(err)
		}
	}
	run(onB, "", "patch", "sink", "node-b-hdmi-0", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"nodeName": "alsa_output.node-b-hdmi-0"}))
	run(onA, endpointJSON(t, "Sink", "node-a-hdmi-1", nil), "create", "-f", "-")
	run(onA, "", "patch", "sink", "node-a-hdmi-1", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"node": "node-a", "connectionType": "hdmi"}))
	// The status write that moves the new Sink into the selection is
	// delivered; it came after node-b's.
	waitFor("sink.audio.liken.sh/node-a-hdmi-1")
	cancel()
	for line := range lines {
		seen = append(seen, line)
	}
	_ = cmd.Wait()
	for _, line := range seen {
		if strings.Contains(line, "node-b") {
			t.Errorf("the watch on status.node=node-a delivered %q", line)
		}
	}
	t.Logf("watch on status.node=node-a delivered %v", seen)
}

// checkAudioVerbs asks the authorizer, as the operator's ServiceAccount,
// for every verb on Sinks, Sources and their status: exactly what the
// operator uses is allowed.
func checkAudioVerbs(t *testing.T, k *kube) {
	ctx := t.Context()
	allowed := map[string][]string{
		"":       {"get", "list", "watch", "create"},
		"status": {"get", "update", "patch"},
	}
	for _, resource := range []string{"sinks", "sources"} {
		for sub, verbs := range allowed {
			for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
				args := append(audioOperator("node-a"), "auth", "can-i", verb, resource+".audio.liken.sh")
				name := resource
				if sub != "" {
					args = append(args, "--subresource="+sub)
					name += "/" + sub
				}
				out, err := k.run(ctx, nil, args...)
				got := strings.TrimSpace(out)
				if (got != "yes" && got != "no") || (err == nil) != (got == "yes") {
					t.Fatalf("can-i %s %s: %q, %v", verb, name, got, err)
				}
				if want := map[bool]string{true: "yes", false: "no"}[slices.Contains(verbs, verb)]; got != want {
					t.Errorf("may audio-operator %s %s: %s, want %s", verb, name, got, want)
				}
			}
		}
	}
}

// checkSinkSchema proves the CRD's schema refuses bad specs with a
// message naming the field, leaves what is stored alone when it refuses
// an update, and keeps a valid spec as written.
func checkSinkSchema(t *testing.T, k *kube) {
	ctx := t.Context()
	valid := map[string]any{
		"volume": 40,
		"mute":   true,
		"controls": map[string]any{
			"Master Playback Volume": 40,
			"Auto-Mute Mode":         "Enabled",
			// The ends of the int32 range a control value is decoded into.
			"Capture Volume": 2147483647,
			"Mic Boost":      -2147483648,
		},
		"layout": []any{"FL", "FR", "FC", "LFE", "RL", "RR"},
	}
	if _, err := k.run(ctx, strings.NewReader(endpointJSON(t, "Sink", "schema-valid", valid)), "create", "-f", "-"); err != nil {
		t.Fatalf("valid Sink refused: %v", err)
	}
	out, err := k.run(ctx, nil, "get", "sink", "schema-valid", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &stored); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(valid)
	var want map[string]any
	_ = json.Unmarshal(wantJSON, &want)
	if diff := cmp.Diff(stored.Spec, want); diff != "" {
		t.Errorf("stored spec (-stored.Spec +want):\n%s", diff)
	}
	// And the Go types read it back, decoded strictly: a JSON name the
	// types and the schema spell differently fails here.
	var typed audiov1.Sink
	if err := yaml.UnmarshalStrict([]byte(out), &typed); err != nil {
		t.Errorf("stored Sink as %T: %v", typed, err)
	} else if v := typed.Spec.Volume; v == nil || *v != 40 || len(typed.Spec.Layout) != 6 ||
		typed.Spec.Controls["Auto-Mute Mode"].StrVal != "Enabled" || typed.Spec.Controls["Master Playback Volume"].IntVal != 40 {
		t.Errorf("stored Sink decodes to spec %+v", typed.Spec)
	}

	// A Sink created with no spec gets the schema's default, {}.
	if _, err := k.run(ctx, strings.NewReader(endpointJSON(t, "Sink", "schema-empty", nil)), "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if out, err := k.run(ctx, nil, "get", "sink", "schema-empty", "-o", "jsonpath={.spec}"); err != nil || out != "{}" {
		t.Errorf("spec of a Sink created without one = %q, %v; want {}", out, err)
	}

	var wide []any
	for i := range 64 {
		wide = append(wide, fmt.Sprintf("AUX%d", i))
	}
	cases := []struct {
		name  string
		spec  map[string]any
		field string   // named in the refusal
		says  []string // one of these is the complaint
	}{
		{"a layout of 65 channels", map[string]any{"layout": append(wide, "FL")},
			"spec.layout", []string{"spec.layout: Too many: 65: must have at most 64 items"}},
		{"a layout entry that is no SPA channel name", map[string]any{"layout": []any{"FL", "XX"}},
			`spec.layout[1]`, []string{`Unsupported value: "XX"`}},
		{"a control name of 10 KB", map[string]any{"controls": map[string]any{strings.Repeat("x", 10<<10): "on"}},
			"spec.controls", []string{"a control name is longer than 64 characters"}},
		{"a control value of 10 KB", map[string]any{"controls": map[string]any{"Headphone Switch": strings.Repeat("x", 10<<10)}},
			"spec.controls", []string{"a control value is longer than 1024 characters"}},
		{"an escape sequence in a control name", map[string]any{"controls": map[string]any{"Master\x1b]0;pwned\x07": 40}},
			"spec.controls", []string{"a control name holds a control, bidirectional or zero-width character"}},
		{"a newline in a control value", map[string]any{"controls": map[string]any{"Input Source": "Mic\nLine"}},
			"spec.controls", []string{"a control value holds a control, bidirectional or zero-width character"}},
		{"a right-to-left override in a control value", map[string]any{"controls": map[string]any{"Input Source": "Mic\u202e"}},
			"spec.controls", []string{"a control value holds a control, bidirectional or zero-width character"}},
		{"a control value one past the int32 range", map[string]any{"controls": map[string]any{"PCM Playback Volume": 2147483648}},
			"spec.controls", []string{"the value of the control PCM Playback Volume is outside the integer range -2147483648 to 2147483647"}},
		{"a control value one below the int32 range", map[string]any{"controls": map[string]any{"PCM Playback Volume": -2147483649}},
			"spec.controls", []string{"the value of the control PCM Playback Volume is outside the integer range -2147483648 to 2147483647"}},
		{"a layout entry twice", map[string]any{"layout": []any{"FL", "FR", "FL"}},
			`spec.layout`, []string{`a channel other than NA appears twice`}},
		{"an empty layout", map[string]any{"layout": []any{}},
			"spec.layout", []string{"should have at least 1 items"}},
		{"a volume of 101", map[string]any{"volume": 101},
			"spec.volume", []string{"less than or equal to 100"}},
		{"a volume of -1", map[string]any{"volume": -1},
			"spec.volume", []string{"greater than or equal to 0"}},
		{"a fractional volume", map[string]any{"volume": 40.5},
			"spec.volume", []string{"must be of type int32"}},
		{"a boolean control value", map[string]any{"controls": map[string]any{"Master Playback Switch": true}},
			"spec.controls.Master Playback Switch", []string{"must be of type integer,string"}},
		{"a list as a control value", map[string]any{"controls": map[string]any{"Master Playback Volume": []any{40, 40}}},
			"spec.controls.Master Playback Volume", []string{"must be of type integer,string"}},
		{"an object as a control value", map[string]any{"controls": map[string]any{"Input Source": map[string]any{"item": "Mic"}}},
			// kubectl asks for strict field validation, so the API server
			// refuses the object's field as unknown before the schema
			// sees the type; without it the field is pruned and the
			// empty object is refused by type.
			"spec.controls.Input Source", []string{"must be of type integer,string", `unknown field "spec.controls.Input Source.item"`}},
		{"a string as the mute", map[string]any{"mute": "yes"},
			"spec.mute", []string{"must be of type boolean"}},
	}
	for _, tc := range cases {
		// As a new object, and as an update of the valid one.
		out, err := k.run(ctx, strings.NewReader(endpointJSON(t, "Sink", "schema-bad", tc.spec)), "create", "-f", "-")
		checkRefusal(t, "creating a Sink with "+tc.name, out, err, tc.field, tc.says)
		patch, _ := json.Marshal(map[string]any{"spec": tc.spec})
		out, err = k.run(ctx, nil, "patch", "sink", "schema-valid", "--type=merge", "-p", string(patch))
		checkRefusal(t, "patching a Sink to "+tc.name, out, err, tc.field, tc.says)
	}
	out, err = k.run(ctx, nil, "get", "sink", "schema-valid", "-o", "jsonpath={.spec}")
	if err != nil {
		t.Fatal(err)
	}
	var after map[string]any
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after, want); diff != "" {
		t.Errorf("refused patches changed the stored spec to (-after +want):\n%s", diff)
	}
	if _, err := k.run(ctx, nil, "get", "sink", "schema-bad"); err == nil {
		t.Errorf("a refused Sink was stored")
	}
}

// checkRefusal requires a kubectl write to have been refused with a
// message that names field and holds one of says.
func checkRefusal(t *testing.T, what, out string, err error, field string, says []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted (%s)", what, strings.TrimSpace(out))
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, field) || !slices.ContainsFunc(says, func(s string) bool { return strings.Contains(msg, s) }) {
		t.Errorf("%s: refused, but the message does not name %s with one of %q: %v", what, field, says, err)
		return
	}
	// The server's message, on one line, and cut: an enumeration's refusal
	// lists all 101 channel names.
	if _, server, ok := strings.Cut(msg, "exit status 1: "); ok {
		msg = server
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	t.Logf("%s: refused: %s", what, msg)
}

// checkColumns writes a whole status as the operator does and reads the
// table kubectl prints for it, by the header's column offsets, since
// values such as a layout hold spaces.
func checkColumns(t *testing.T, k *kube) {
	ctx := t.Context()
	onA := audioOperator("node-a")
	ready := []any{
		condition("Connected", "True", "MonitorPresent"),
		condition("Ready", "True", "NodePresent"),
		condition("LayoutApplied", "True", audiov1.ReasonApplied),
	}
	for _, obj := range []struct{ kind, name string }{{"Sink", "node-a-columns"}, {"Source", "node-a-columns"}} {
		if _, err := k.runAs(ctx, onA, endpointJSON(t, obj.kind, obj.name, nil), "create", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	sinkStatus := map[string]any{
		"node": "node-a", "connectionType": "hdmi",
		"observed":     map[string]any{"volume": 40, "mute": true},
		"claim":        map[string]any{"namespace": "games", "name": "living-room"},
		"conditions":   ready,
		"layout":       []any{"FL", "FR", "FC", "LFE", "RL", "RR"},
		"layoutSource": string(audiov1.LayoutFromSpec),
	}
	sourceStatus := map[string]any{
		"node": "node-a", "connectionType": "usb",
		"observed":   map[string]any{"volume": 75, "mute": false},
		"conditions": ready[:2],
	}
	for kind, status := range map[string]map[string]any{"sink": sinkStatus, "source": sourceStatus} {
		if _, err := k.runAs(ctx, onA, "", "patch", kind, "node-a-columns",
			"--subresource=status", "--type=merge", "-p", statusPatch(t, status)); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		args []string
		want map[string]string // column to value; AGE only for its presence
		cols []string
	}{
		{
			args: []string{"get", "sinks", "node-a-columns"},
			cols: []string{"NAME", "NODE", "CONNECTION", "VOLUME", "MUTE", "CLAIM", "CONNECTED", "READY", "LAYOUT", "AGE"},
			want: map[string]string{"NAME": "node-a-columns", "NODE": "node-a", "CONNECTION": "hdmi", "VOLUME": "40",
				"MUTE": "true", "CLAIM": "living-room", "CONNECTED": "True", "READY": "True", "LAYOUT": `["FL","FR","FC","LFE","RL","RR"]`},
		},
		{
			args: []string{"get", "sinks", "node-a-columns", "-o", "wide"},
			cols: []string{"NAME", "NODE", "CONNECTION", "VOLUME", "MUTE", "CLAIM", "CONNECTED", "READY", "LAYOUT", "LAYOUT SOURCE", "AGE"},
			want: map[string]string{"NAME": "node-a-columns", "LAYOUT": `["FL","FR","FC","LFE","RL","RR"]`, "LAYOUT SOURCE": "Spec"},
		},
		{
			args: []string{"get", "sources", "node-a-columns"},
			cols: []string{"NAME", "NODE", "CONNECTION", "VOLUME", "MUTE", "CLAIM", "CONNECTED", "READY", "AGE"},
			want: map[string]string{"NAME": "node-a-columns", "NODE": "node-a", "CONNECTION": "usb", "VOLUME": "75",
				"MUTE": "false", "CLAIM": "", "CONNECTED": "True", "READY": "True"},
		},
		{
			args: []string{"get", "sources", "node-a-columns", "-o", "wide"},
			cols: []string{"NAME", "NODE", "CONNECTION", "VOLUME", "MUTE", "CLAIM", "CONNECTED", "READY", "AGE"},
			want: map[string]string{"NAME": "node-a-columns", "CONNECTION": "usb"},
		},
	}
	for _, tc := range cases {
		out, err := k.run(ctx, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl %s:\n%s", strings.Join(tc.args, " "), strings.TrimRight(out, "\n"))
		rows, err := table(out, tc.cols)
		if err != nil {
			t.Errorf("kubectl %s: %v", strings.Join(tc.args, " "), err)
			continue
		}
		if len(rows) != 1 {
			t.Errorf("kubectl %s: %d rows, want 1", strings.Join(tc.args, " "), len(rows))
			continue
		}
		for col, want := range tc.want {
			if got := rows[0][col]; got != want {
				t.Errorf("kubectl %s: %s = %q, want %q", strings.Join(tc.args, " "), col, got, want)
			}
		}
		if age := rows[0]["AGE"]; age == "" || !strings.ContainsAny(age[len(age)-1:], "smhd") {
			t.Errorf("kubectl %s: AGE = %q", strings.Join(tc.args, " "), age)
		}
	}
}

// table reads kubectl's table output whose header must be exactly cols:
// one map per row, from column name to value. A column starts where its
// name starts in the header and ends where the next one starts, because
// a value such as a layout may hold spaces and a name such as LAYOUT
// SOURCE does.
func table(out string, cols []string) ([]map[string]string, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	starts := make([]int, len(cols))
	at := 0
	for i, name := range cols {
		n := strings.Index(header[at:], name)
		if n < 0 || strings.TrimSpace(header[at:at+n]) != "" || (i > 0 && n < 2) {
			return nil, fmt.Errorf("header %q is not the columns %q", header, cols)
		}
		starts[i] = at + n
		at += n + len(name)
	}
	if strings.TrimSpace(header[at:]) != "" {
		return nil, fmt.Errorf("header %q has columns after %q", header, cols)
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, name := range cols {
			end := len(line)
			if i+1 < len(cols) {
				end = min(end, starts[i+1])
			}
			if starts[i] < end {
				row[name] = strings.TrimSpace(line[starts[i]:end])
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// checkPodMonitor renders an overlay of the audio base that takes the
// podmonitor component, as its comment tells a person to, and proves the
// PodMonitor it adds selects the DaemonSet's pods on a port the operator
// container declares.
func checkPodMonitor(t *testing.T, k *kube, root string, baseObjects []string) {
	ctx := t.Context()
	overlay := t.TempDir()
	// kustomize refuses absolute paths to a base or component.
	base, err := filepath.Rel(overlay, filepath.Join(root, "deploy", "audio"))
	if err != nil {
		t.Fatal(err)
	}
	component := filepath.Join(base, "components", "podmonitor")
	kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n", base, component)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := k.run(ctx, nil, "kustomize", overlay)
	if err != nil {
		t.Fatal(err)
	}
	docs := parseDocs(t, "rendered overlay", []byte(out))
	pm := find(docs, "PodMonitor/audio-operator")
	if pm == nil {
		t.Fatalf("the overlay renders no PodMonitor/audio-operator")
	}
	if v := pm["apiVersion"]; v != "monitoring.coreos.com/v1" {
		t.Errorf("PodMonitor apiVersion %v", v)
	}
	if ns, _, _ := nestedString(pm, "metadata", "namespace"); ns != namespace {
		t.Errorf("PodMonitor namespace %q, want %q: a PodMonitor selects pods in its own namespace", ns, namespace)
	}
	var spec struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port   string `json:"port"`
				Path   string `json:"path"`
				Scheme string `json:"scheme"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	strictInto(t, pm, &spec)
	if want := map[string]string{"app": "audio-operator"}; !reflect.DeepEqual(spec.Spec.Selector.MatchLabels, want) {
		t.Errorf("PodMonitor selects %v, want %v", spec.Spec.Selector.MatchLabels, want)
	}
	if len(spec.Spec.Endpoints) != 1 || spec.Spec.Endpoints[0].Port != "metrics" || spec.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("PodMonitor endpoints %+v, want port metrics at /metrics", spec.Spec.Endpoints)
	}

	// The DaemonSet's pods carry the label, and its operator container
	// names the port the PodMonitor scrapes, as 9200.
	ds := find(docs, "DaemonSet/audio-operator")
	var d struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec struct {
					Containers []struct {
						Name  string `json:"name"`
						Ports []struct {
							Name          string `json:"name"`
							ContainerPort int    `json:"containerPort"`
						} `json:"ports"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	data, _ := json.Marshal(ds)
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for k, v := range spec.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the DaemonSet's pods have labels %v; the PodMonitor selects %s=%s", d.Spec.Template.Metadata.Labels, k, v)
		}
	}
	var port int
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "metrics" && c.Name == "operator" {
				port = p.ContainerPort
			}
		}
	}
	if port != 9200 {
		t.Errorf("the operator container's metrics port is %d, want 9200", port)
	}

	// The overlay adds only the PodMonitor to the base.
	if want := len(baseObjects) + 1; len(docs) != want {
		t.Errorf("the overlay renders %d objects, want the base's and the PodMonitor, %d", len(docs), want)
	}
}

// strictInto decodes obj into a struct of the fields the test expects,
// refusing any other: a misspelt field in the manifest fails here.
func strictInto(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	// apiVersion, kind and metadata are checked by the caller.
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	spec, _ := json.Marshal(map[string]json.RawMessage{"spec": m["spec"]})
	if err := yaml.UnmarshalStrict(spec, into); err != nil {
		t.Errorf("%s: %v", kindName(obj), err)
	}
}
