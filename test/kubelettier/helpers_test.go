// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/test/kubelettier/report"
	testpoll "github.com/liken-sh/operators/test/poll"
)

const ns = "liken-system"

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// poll calls check until it is done, failing the test after timeout
// with the last state it reported: test/poll's WaitFor.
func poll(t testing.TB, what string, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	testpoll.WaitFor(t, context.Background(), what, timeout, check)
}

// podReady reports whether the pod's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describe is a one-line account of a pod's phase and containers.
func describe(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", p.Name, p.Status.Phase)
	all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, c := range all {
		state := "?"
		switch {
		case c.State.Running != nil:
			state = "running"
		case c.State.Waiting != nil:
			state = "waiting:" + c.State.Waiting.Reason + ":" + c.State.Waiting.Message
		case c.State.Terminated != nil:
			state = fmt.Sprintf("terminated:%d:%s", c.State.Terminated.ExitCode, c.State.Terminated.Reason)
		}
		fmt.Fprintf(&b, " [%s %s ready=%v restarts=%d]", c.Name, state, c.Ready, c.RestartCount)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, " %s: %s", c.Type, c.Message)
		}
	}
	return b.String()
}

// waitDaemonPod waits until a pod with label app=<app>, other than the one
// of UID not, is ready as ready says and returns it.
func waitDaemonPod(t testing.TB, ctx context.Context, app string, timeout time.Duration, not string, ready func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, "pod of "+app+" Ready", timeout, func() (bool, string) {
		list, err := cluster.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for i := range list.Items {
			p := &list.Items[i]
			states = append(states, describe(p))
			if string(p.UID) != not && p.DeletionTimestamp == nil && ready(p) {
				pod = p
				return true, ""
			}
		}
		return false, strings.Join(states, "; ")
	})
	return pod
}

// containerStatus returns the named container's status (init or regular).
func containerStatus(t testing.TB, p *corev1.Pod, name string) corev1.ContainerStatus {
	t.Helper()
	for _, c := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("pod %s has no container %s", p.Name, name)
	return corev1.ContainerStatus{}
}

// waitRestarted polls the pod p (by namespace and name) until its
// container name has restarted more than before times and up holds of
// its status (containerStarted, containerReady), failing the test after
// within. It returns when the higher restart count was first seen.
func waitRestarted(t testing.TB, ctx context.Context, p *corev1.Pod, name string, before int32, within time.Duration, up func(corev1.ContainerStatus) bool) time.Time {
	t.Helper()
	var restarted time.Time
	poll(t, "the "+name+" container of "+p.Name+" restarted", within, func() (bool, string) {
		cur := getPod(t, ctx, p.Namespace, p.Name)
		c := containerStatus(t, cur, name)
		if c.RestartCount > before && restarted.IsZero() {
			restarted = time.Now()
		}
		return !restarted.IsZero() && up(c), describe(cur)
	})
	return restarted
}

// containerStarted reports whether the kubelet holds the container
// started (its startup probe, if any, passed).
func containerStarted(c corev1.ContainerStatus) bool { return c.Started != nil && *c.Started }

// containerReady reports whether the container passes its readiness
// probe.
func containerReady(c corev1.ContainerStatus) bool { return c.Ready }

// containerPid returns the pid of the process whose comm is comm in the
// named running container of p (the last one in /proc order, should
// there be several), failing the test when there is none.
func containerPid(t testing.TB, p *corev1.Pod, name, comm string) int {
	t.Helper()
	pid := 0
	for _, hp := range containerProcs(t, p, name) {
		if hp.comm == comm {
			pid = hp.pid
		}
	}
	if pid == 0 {
		t.Fatalf("no %s process in the %s container of %s", comm, name, p.Name)
	}
	return pid
}

// startedAt is when the container's current run started.
func startedAt(t testing.TB, p *corev1.Pod, name string) time.Time {
	t.Helper()
	c := containerStatus(t, p, name)
	switch {
	case c.State.Running != nil:
		return c.State.Running.StartedAt.Time
	case c.State.Terminated != nil:
		return c.State.Terminated.StartedAt.Time
	}
	t.Fatalf("container %s of %s has not started", name, p.Name)
	return time.Time{}
}

// hostProc is a process of a container, read from the host's /proc.
type hostProc struct {
	pid            int
	comm           string
	uid            int
	capEff, capBnd uint64
	noNewPrivs     bool
}

// containerProcs lists the host processes of a running container: those
// whose cgroup path names its containerd ID.
func containerProcs(t testing.TB, p *corev1.Pod, name string) []hostProc {
	t.Helper()
	c := containerStatus(t, p, name)
	_, id, ok := strings.Cut(c.ContainerID, "://")
	if !ok || c.State.Running == nil {
		t.Fatalf("container %s of %s is not running (%q)", name, p.Name, c.ContainerID)
	}
	entries, err := os.ReadDir("/proc")
	must(t, err)
	var out []hostProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !bytes.Contains(cg, []byte(id)) {
			continue
		}
		hp := hostProc{pid: pid}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		hp.comm = strings.TrimSpace(string(comm))
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			v = strings.TrimSpace(v)
			switch k {
			case "Uid":
				hp.uid, _ = strconv.Atoi(strings.Fields(v)[1]) // effective
			case "CapEff":
				hp.capEff, _ = strconv.ParseUint(v, 16, 64)
			case "CapBnd":
				hp.capBnd, _ = strconv.ParseUint(v, 16, 64)
			case "NoNewPrivs":
				hp.noNewPrivs = v == "1"
			}
		}
		out = append(out, hp)
	}
	if len(out) == 0 {
		t.Fatalf("no host process in container %s of %s (%s)", name, p.Name, id)
	}
	return out
}

// Capability bits (include/uapi/linux/capability.h).
const (
	capSetgid         = 6
	capSetuid         = 7
	capNetBindService = 10
	capNetAdmin       = 12
	capNetRaw         = 13
)

func caps(bits ...int) uint64 {
	var m uint64
	for _, b := range bits {
		m |= 1 << b
	}
	return m
}

// consumerPod is a pod of the consumer image in mode ("report" or "tone")
// whose one container takes claim.
func consumerPod(name, mode, claim string, hostNetwork bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                   hostNetwork,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			ResourceClaims:                []corev1.PodResourceClaim{{Name: "dev", ResourceClaimName: ptr.To(claim)}},
			Containers: []corev1.Container{{
				Name:            "consumer",
				Image:           ConsumerRef,
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{mode},
				Resources:       corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "dev"}}},
			}},
		},
	}
}

// claimFor is a claim of one device of class, narrowed by cel when given.
func claimFor(name, class, cel string) *resourceapi.ResourceClaim {
	req := resourceapi.DeviceRequest{Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}
	if cel != "" {
		req.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}},
	}
}

// directMode asks, through the Bluetooth driver's opaque parameter, for
// the controller's own input nodes: this host's kernel has no uinput, so
// the input relay cannot make a claim's devices here (the VM tier proves
// the relay on a real kernel).
func directMode(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	c.Spec.Devices.Config = append(c.Spec.Devices.Config, resourceapi.DeviceClaimConfiguration{
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver:     bluetooth.DriverName,
			Parameters: runtime.RawExtension{Raw: []byte(`{"mode":"direct"}`)},
		}},
	})
	return c
}

// startConsumer creates the claim and the pod and waits until the pod
// runs and has printed its report, which it returns with the allocated
// claim and how long the pod took from creation to running.
func startConsumer(t testing.TB, ctx context.Context, claim *resourceapi.ResourceClaim, pod *corev1.Pod) (report.Report, *resourceapi.ResourceClaim, *corev1.Pod, time.Duration) {
	t.Helper()
	client := cluster.Client()
	if _, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	poll(t, "consumer "+pod.Name+" running", 90*time.Second, func() (bool, string) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && podReady(p), describe(p)
	})
	took := time.Since(began)
	r := readReport(t, ctx, pod.Namespace, pod.Name)
	got, err := client.ResourceV1().ResourceClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
	must(t, err)
	return r, got, running, took
}

// readReport reads the consumer's report line from its log.
func readReport(t testing.TB, ctx context.Context, namespace, pod string) report.Report {
	t.Helper()
	var r report.Report
	poll(t, "report of "+pod, 30*time.Second, func() (bool, string) {
		data, err := cluster.Client().CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "report "); ok {
				if err := json.Unmarshal([]byte(rest), &r); err != nil {
					return false, err.Error()
				}
				return true, ""
			}
		}
		return false, "no report line yet: " + string(data)
	})
	return r
}

// deletePod deletes a pod and waits until it is gone.
func deletePod(t testing.TB, ctx context.Context, namespace, name string) {
	t.Helper()
	client := cluster.Client()
	must(t, client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	poll(t, "pod "+name+" gone", 60*time.Second, func() (bool, string) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return true, ""
		}
		return false, describe(p)
	})
}

// cdiSpecs lists the CDI spec files of driver in /var/run/cdi.
func cdiSpecs(t testing.TB, driver string) []string {
	t.Helper()
	entries, err := os.ReadDir("/var/run/cdi")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), driver+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}
