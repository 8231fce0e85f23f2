// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
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

	if !created(5 * time.Second) {
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
	if _, err := kubelet.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatalf("GetInfo over the renamed socket: %v", err)
	}
	_, _ = kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "version not supported"})
	if !created(5 * time.Second) {
		t.Fatal("after the kubelet refused the registration, the plugin did not ask again")
	}

	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for registered() != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if registered() != 1 {
		t.Fatal("liken_dra_registered did not become 1 once the kubelet acknowledged the registration")
	}
	retries := testutil.ToFloat64(d.metrics.registrationRetries)
	if created(4 * opts.RegistrationTimeout) {
		t.Error("the plugin asked again after the kubelet acknowledged its registration")
	}
	if got := testutil.ToFloat64(d.metrics.registrationRetries); got != retries || got < 2 {
		t.Errorf("liken_dra_registration_retries_total = %v, want it at least 2 and unchanged once registered (%v)", got, retries)
	}
}
