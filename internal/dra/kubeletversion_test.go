// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/liken-sh/operators/test/poll"
)

// TestRegistrationNamesAKubeletWithoutTheDRAAPI plays kubelets that
// cannot take this plugin over the real registration socket, each
// refusal worded as the kubelet's plugin manager words it
// (pkg/kubelet/pluginmanager/operationexecutor: a kubelet with the
// DynamicResourceAllocation gate off has no handler for the DRAPlugin
// type; pkg/kubelet/cm/dra/plugin: an older one speaks none of the
// offered services). Each is named in the metric at once and in one
// log line that says what it means, and the plugin keeps asking; a
// kubelet that never calls is named too, and a registration clears it.
func TestRegistrationNamesAKubeletWithoutTheDRAAPI(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	dir := t.TempDir()
	opts := Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: fake.NewClientset(), CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi"),
		RegistrationTimeout: 200 * time.Millisecond, Registerer: prometheus.NewRegistry(),
	}
	d, err := Start(ctx, opts, func(context.Context, DeviceRequest[testParams]) (ContainerEdits, error) { return ContainerEdits{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	problem := func(reason string) float64 {
		return testutil.ToFloat64(d.metrics.registrationProblem.WithLabelValues(reason))
	}
	// logged waits for a log line holding every one of parts.
	logged := func(what string, parts ...string) {
		t.Helper()
		poll.WaitFor(t, ctx, what, 30*time.Second, func() (bool, string) {
			for _, line := range strings.Split(logs.String(), "\n") {
				if all(line, parts) {
					return true, ""
				}
			}
			return false, "no such line yet"
		})
	}

	logged("a log line naming a kubelet that never asked", "No kubelet has asked for this plugin's registration", `reason="NoKubeletAsked"`, opts.RegistrarDir)
	if problem(regNoKubelet) != 1 {
		t.Error("liken_dra_registration_problem{reason=NoKubeletAsked} is not 1 while nothing asked")
	}

	conn, err := grpc.NewClient("unix://"+d.registrationSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := registerapi.NewRegistrationClient(conn)
	refuse := func(reason string) {
		t.Helper()
		info, err := kubelet.GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatalf("GetInfo: %v", err)
		}
		if info.Type != "DRAPlugin" || len(info.SupportedVersions) == 0 {
			t.Fatalf("GetInfo answered %+v, want a DRAPlugin offering services", info)
		}
		// The helper answers a refusal with an error of its own, as the
		// kubelet expects; the refusal is what this test is about.
		_, _ = kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: reason}, grpc.WaitForReady(true))
	}

	sock := d.registrationSocket()
	refuse("RegisterPlugin error -- no handler registered for plugin type: DRAPlugin at socket " + sock)
	poll.Until(t, "liken_dra_registration_problem{reason=KubeletWithoutDRA} 1 once the kubelet said it has no DRA handler", 30*time.Second,
		func() bool { return problem(regKubeletWithoutDRA) == 1 && problem(regNoKubelet) == 0 })
	logged("one line saying the kubelet has DRA off", "Dynamic Resource Allocation turned off", "DynamicResourceAllocation feature gate",
		`reason="KubeletWithoutDRA"`, "asking again", "no handler registered for plugin type")

	refuse(`RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin ` + testDriver +
		` at endpoint ` + sock + `: none of services supported by the plugin (["v1.DRAPlugin" "v1beta1.DRAPlugin"]) are supported by the kubelet (["v1alpha4.Node"])`)
	poll.Until(t, "liken_dra_registration_problem{reason=KubeletDRAVersion} 1 once the kubelet refused the versions", 30*time.Second,
		func() bool { return problem(regKubeletDRAVersion) == 1 && problem(regKubeletWithoutDRA) == 0 })
	logged("one line naming the versions offered", "speaks none of the DRA API versions this plugin offers (v1.DRAPlugin, v1beta1.DRAPlugin;",
		`reason="KubeletDRAVersion"`, "asking again")

	retries := testutil.ToFloat64(d.metrics.registrationRetries)
	poll.Until(t, "the plugin asking again after the refusals", 30*time.Second,
		func() bool { return testutil.ToFloat64(d.metrics.registrationRetries) > retries })

	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "every liken_dra_registration_problem 0 once registered", 30*time.Second, func() bool {
		for _, r := range registrationReasons {
			if problem(r) != 0 {
				return false
			}
		}
		return testutil.ToFloat64(d.metrics.registered) == 1
	})
}

func all(line string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(line, p) {
			return false
		}
	}
	return true
}
