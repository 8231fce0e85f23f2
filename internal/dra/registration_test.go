// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/liken-sh/operators/test/poll"
)

// TestRegistrationRefusedOrUnansweredIsAskedAgain plays the kubelet's
// side of the registration handshake over the real socket: with no answer
// the plugin asks again (its socket is created anew where the kubelet's
// plugin watcher looks), a refusal is asked again too, and once the
// kubelet acknowledges it the plugin is quiet and reports itself
// registered.
func TestRegistrationRefusedOrUnansweredIsAskedAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	opts := Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: fake.NewClientset(), CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
		RegistrationTimeout: 300 * time.Millisecond, Registerer: reg,
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	d, err := Start(ctx, opts, func(context.Context, DeviceRequest[testParams]) (ContainerEdits, error) { return ContainerEdits{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if err := watcher.Add(opts.RegistrarDir); err != nil {
		t.Fatal(err)
	}
	sock := d.registrationSocket()
	// created waits for the socket to be created again under its name.
	created := func(within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case ev := <-watcher.Events:
				if ev.Name == sock && ev.Has(fsnotify.Create) {
					return true
				}
			case err := <-watcher.Errors:
				t.Fatal(err)
			case <-deadline:
				return false
			}
		}
	}
	registered := func() float64 { return testutil.ToFloat64(d.metrics.registered) }

	if !created(30 * time.Second) {
		t.Fatal("with no kubelet answering, the plugin did not ask again")
	}
	if registered() != 0 {
		t.Error("liken_dra_registered is 1 before any kubelet answered")
	}

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := registerapi.NewRegistrationClient(conn)
	// WaitForReady: a connection tried while the socket is renamed away
	// for a moment is tried again.
	if _, err := kubelet.GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("GetInfo over the renamed socket: %v", err)
	}
	_, _ = kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "version not supported"}, grpc.WaitForReady(true))
	if !created(30 * time.Second) {
		t.Fatal("after the kubelet refused the registration, the plugin did not ask again")
	}

	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "liken_dra_registered 1 once the kubelet acknowledged the registration", 30*time.Second,
		func() bool { return registered() == 1 })
	retries := testutil.ToFloat64(d.metrics.registrationRetries)
	// A request that began before the acknowledgement arrived (on a slow
	// host the backoff can end first) may still have its create event on
	// the way. Inotify queues events in order, so once a marker created
	// now is seen, every create after it is a request made after the
	// plugin reported itself registered.
	marker := filepath.Join(opts.RegistrarDir, ".marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for seen := false; !seen; {
		select {
		case ev := <-watcher.Events:
			seen = ev.Name == marker && ev.Has(fsnotify.Create)
		case err := <-watcher.Errors:
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatal("no event for the marker file")
		}
	}
	if created(4 * opts.RegistrationTimeout) {
		t.Error("the plugin asked again after the kubelet acknowledged its registration")
	}
	if got := testutil.ToFloat64(d.metrics.registrationRetries); got != retries || got < 2 {
		t.Errorf("liken_dra_registration_retries_total = %v, want it at least 2 and unchanged once registered (%v)", got, retries)
	}
}
