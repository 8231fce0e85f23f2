// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), "v1.2.3", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, errOut.String()
}

// A name that is not a DNS label is refused before any cluster is
// dialled, quoted cut short.
func TestCaptureRefusesNamesThatAreNotDNSLabels(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{strings.Repeat("a", 100<<10), `Sink name "aaaa`},
		{"Kitchen_HDMI", `Sink name "Kitchen_HDMI" is not a Sink name`},
		{"x-", "is not a Sink name"},
	} {
		code, msg := run(t, "--kubeconfig", "/nonexistent", "capture", tc.name)
		if code != 1 || !strings.Contains(msg, tc.want) || len(msg) > 300 || strings.Contains(msg, "/nonexistent") {
			t.Errorf("capture %.20q: exit %d, %q; want 1 and a short refusal with %q", tc.name, code, msg, tc.want)
		}
	}
	if code, msg := run(t, "--kubeconfig", "/nonexistent", "capture", "--source", "Mic!"); code != 1 || !strings.Contains(msg, `Source name "Mic!"`) {
		t.Errorf("capture --source Mic!: exit %d, %q", code, msg)
	}
}

// A problem document is shown by its detail or title, a huge one cut
// and said to be, and a body that is not one never as raw JSON.
func TestProblemErrorIsShort(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		ct, body, want string
	}{
		{"application/problem+json", `{"title":"Not Found","status":404,"detail":"no Sink named ` + long + `"}`, "(cut: 4096 of 102414 bytes shown) (404 Not Found)"},
		{"application/problem+json", `{"title":"Not Found","status":404}`, "Not Found (404 Not Found)"},
		{"application/problem+json", `{"title":"Not Found","detail":"` + long, "bytes of JSON that is not a problem document"},
		{"text/plain", long, "(cut: 4096 of 102400 bytes shown)"},
	} {
		resp := &http.Response{StatusCode: 404, Status: "404 Not Found", Header: http.Header{"Content-Type": {tc.ct}}, Body: io.NopCloser(strings.NewReader(tc.body))}
		msg := problemError(resp).Error()
		if !strings.Contains(msg, tc.want) || len(msg) > maxProblemText+100 || strings.Contains(msg, "{") {
			t.Errorf("%s %.40q: %.300q; want a message of at most %d bytes with %q and no JSON", tc.ct, tc.body, msg, maxProblemText+100, tc.want)
		}
	}
}

// A problem of a few hundred bytes is shown whole, its reason at the end
// included, with control characters still kept from the terminal.
func TestProblemErrorShowsAllOfALongDetail(t *testing.T) {
	detail := `Sink "kitchen-pci-0000-00-1f-3-hdmi-3" is disconnected: the monitor behind HDMI 3 stopped answering its EDID ` +
		`and the ELD the driver reads is empty, so no audio can reach it` + "\u001b[2J" + ` (MonitorAbsent); a tap would open its PCM ` +
		`and could take the converter a connected output of its card needs.`
	body, err := json.Marshal(map[string]any{"title": "The output is disconnected", "status": 409, "detail": detail})
	if err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{StatusCode: 409, Status: "409 Conflict", Header: http.Header{"Content-Type": {"application/problem+json"}},
		Body: io.NopCloser(bytes.NewReader(body))}
	msg := problemError(resp).Error()
	want := strings.Replace(detail, "\u001b", "", 1) + " (409 Conflict)"
	if msg != want {
		t.Errorf("problemError of a %d-byte detail:\n%s\nwant it whole, without the escape:\n%s", len(detail), msg, want)
	}
}

// A huge text is cut after a whole sentence, not within a word.
func TestShortTextCutsAtASentence(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3*maxProblemText; i++ {
		fmt.Fprintf(&b, "Sentence %d says why the tap was refused. ", i)
	}
	got := shortText(b.String())
	kept, note, ok := strings.Cut(got, " ... (cut: ")
	if !ok || !strings.HasSuffix(kept, " was refused.") || len(kept) > maxProblemText || len(kept) < maxProblemText/2 ||
		note != fmt.Sprintf("%d of %d bytes shown)", len(kept), len(strings.TrimSpace(b.String()))) {
		t.Errorf("shortText of %d bytes of sentences: %.80q...%q; want whole sentences up to %d bytes and the cut said", b.Len(), got, got[max(0, len(got)-120):], maxProblemText)
	}
	// Words without a sentence end: cut at a word.
	words := strings.Repeat("refused ", maxProblemText)
	if got := shortText(words); !strings.HasSuffix(strings.SplitN(got, " ... (cut:", 2)[0], " refused") {
		t.Errorf("shortText of words: ...%q; want it cut after a whole word", got[max(0, len(got)-80):])
	}
}

// $KUBECONFIG naming a file that does not exist is said so, by list and
// by capture, rather than ending in a dial of localhost:8080.
func TestMissingKubeconfigIsNamed(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{{"list"}, {"capture", "kitchen-hdmi-3"}} {
		code, msg := run(t, args...)
		if code != 1 || !strings.Contains(msg, "KUBECONFIG names /nonexistent, which does not exist") || strings.Contains(msg, "localhost") || strings.Contains(msg, "warning") {
			t.Errorf("%v: exit %d, %q; want 1 and the missing file named", args, code, msg)
		}
	}
}

// The version drift warning follows a real error, and an API server that
// cannot be reached gives the error alone.
func TestVersionWarningAfterTheError(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/daemonsets"):
			_, _ = io.WriteString(w, `{"kind":"DaemonSetList","apiVersion":"apps/v1","items":[{"metadata":{"name":"audio-operator"},"spec":{"template":{"spec":{"containers":[{"name":"operator","image":"registry.local/audio-operator:v9.9.9"}]}}}}]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer api.Close()
	t.Setenv("KUBECONFIG", "")
	code, msg := run(t, "--server", api.URL, "capture", "kitchen-hdmi-3")
	errAt, warnAt := strings.Index(msg, "error: ConfigMap liken-system/audio-api-ca, the CA to trust, is missing"), strings.Index(msg, `warning: the audio operator runs registry.local/audio-operator:v9.9.9`)
	if code != 1 || errAt < 0 || warnAt < errAt || strings.Contains(msg, "has not started") {
		t.Errorf("exit %d, %q; want the error, then the version warning", code, msg)
	}
	api.Close()
	code, msg = run(t, "--server", api.URL, "capture", "kitchen-hdmi-3")
	if code != 1 || strings.Contains(msg, "warning") || !strings.Contains(msg, "error:") {
		t.Errorf("no API server: exit %d, %q; want the error alone", code, msg)
	}
}

// An -o that cannot be written is refused before anything is dialled,
// naming the path as given, never the hidden temporary file beside it.
func TestCaptureOutputErrorNamesThePathGiven(t *testing.T) {
	out := t.TempDir() + "/nonexistent-dir/x.wav"
	code, msg := run(t, "--kubeconfig", "/nonexistent", "capture", "kitchen-hdmi-3", "-o", out)
	if code != 1 || !strings.Contains(msg, "-o "+out+": no such file or directory") || strings.Contains(msg, ".x.wav.") || strings.Contains(msg, "KUBECONFIG") {
		t.Errorf("capture -o %s: exit %d, %q; want 1 and the path given with the cause", out, code, msg)
	}
}

// A caller without the plugin's Role is told which grant is missing,
// not only that the API server refused a ConfigMap.
func TestForbiddenNamesTheGrant(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"configmaps \"audio-api-ca\" is forbidden: User \"bob\" cannot get resource \"configmaps\""}`)
	}))
	defer api.Close()
	t.Setenv("KUBECONFIG", "")
	code, msg := run(t, "--server", api.URL, "--force", "capture", "kitchen-hdmi-3")
	if code != 1 || !strings.Contains(msg, "is forbidden") || !strings.Contains(msg, "the Role audio-capture-client in namespace liken-system") || !strings.Contains(msg, "ClusterRole audio-capture-viewer") {
		t.Errorf("exit %d, %q; want the refusal and the grant it lacks", code, msg)
	}
}
