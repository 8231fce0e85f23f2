// SPDX-License-Identifier: Apache-2.0

// Command audio-driver holds the audio image's modes that talk to the API
// server. The image's entrypoint, audio-operator, executes it in place for
// them (cmd/audio-operator), so this binary's Kubernetes clientset is
// paid for by these containers only:
//
//	audio-driver                         the operator (DRA driver audio.liken.sh)
//	audio-driver declare                 init container: PipeWire and WirePlumber drop-ins
//	audio-driver api                     audio-api, the capture API's HTTPS entry (deploy/audio/api.yaml)
//
// It also runs the entrypoint's own modes (pipewire, wireplumber,
// graph-answers, endpoints-registered) when flags precede the mode name,
// because the entrypoint hands such a command line here whole.
//
// Environment (as deploy/audio/operator.yaml sets it): NODE_NAME,
// PIPEWIRE_RUNTIME_DIR and XDG_RUNTIME_DIR, METRICS_ADDRESS (operator;
// empty: no listener), DBUS_SYSTEM_BUS_ADDRESS (declare: set when the
// claim delivered a Bluetooth media bus), POD_UID (optional, per-pod
// kubelet sockets). Flags (before the mode's own arguments) move host
// paths for tests and for a kubelet with another root directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/modes"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/procmem"
)

// usage prints the image's command line as a person meets it: the
// entrypoint's name (this binary is only ever reached through it), its
// modes, then the flags.
func usage() {
	w := flag.CommandLine.Output()
	fmt.Fprint(w, `usage: audio-operator [flags] [MODE [ARGS]]

Modes:
  (none)                the operator: DRA driver audio.liken.sh, Sinks and Sources
  declare               init container: write PipeWire's and WirePlumber's drop-ins
  pipewire              sidecar: run PipeWire, restarting it on a new declaration
  wireplumber           sidecar: run WirePlumber, ending on a lost media bus
  graph-answers         probe: does PipeWire answer a graph read
  endpoints-registered  probe: does the adapter advertise WirePlumber's endpoints
  capture               the capture container (configured by environment)
  api                   audio-api, the capture API's HTTPS entry

Flags (before the mode, or after it for the operator and declare):
`)
	flag.PrintDefaults()
}

// paths are the host paths every mode may be pointed elsewhere.
type paths struct {
	kubeconfig, devSnd, sysfs, recorded string
	pipewireDir, wireplumberDir         string
	registrar, plugins, cdi, alsaPath   string
	rate                                int
}

func main() {
	klog.InitFlags(nil)
	var p paths
	flag.StringVar(&p.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else the pod's service account)")
	flag.StringVar(&p.devSnd, "dev-snd", alsa.DevSndRoot, "the /dev/snd the claim delivered")
	flag.StringVar(&p.sysfs, "sys-root", "/sys", "sysfs mount")
	flag.StringVar(&p.recorded, "recorded-cards", "", "serve cards from recorded dumps (card<N>.json) in this directory instead of the kernel (demo, tests)")
	flag.StringVar(&p.pipewireDir, "pipewire-dir", pipewire.DeclarationDir, "PipeWire drop-in directory")
	flag.StringVar(&p.wireplumberDir, "wireplumber-dir", pipewire.WirePlumberDropInDir, "WirePlumber drop-in directory")
	flag.StringVar(&p.registrar, "kubelet-registry-dir", dra.DefaultRegistrarDir, "kubelet plugin registration directory")
	flag.StringVar(&p.plugins, "kubelet-plugins-dir", dra.DefaultPluginsDir, "kubelet plugins directory; the driver uses <dir>/"+audio.DriverName)
	flag.StringVar(&p.cdi, "cdi-dir", dra.DefaultCDIDir, "CDI spec directory")
	flag.StringVar(&p.alsaPath, "alsa-path", "", "declare every output on this ALSA device instead of hw:<card>,<pcm> (\"null\" where there is no card)")
	flag.IntVar(&p.rate, "rate", 0, "audio.rate for every declared output (needed with -alsa-path null)")
	flag.Usage = usage
	flag.Parse()
	args := flag.Args()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	mode := ""
	if len(args) > 0 {
		mode, args = args[0], args[1:]
	}
	// The operator and declare take the same flags after the mode too
	// (`audio-operator declare -pipewire-dir x`), and nothing else: a
	// flag ignored there would write to the real /etc.
	ownFlags := func() error {
		if err := flag.CommandLine.Parse(args); err != nil {
			return err
		}
		if flag.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %q", flag.Args())
		}
		return nil
	}
	switch mode {
	case "":
		if err := ownFlags(); err != nil {
			exit(err)
		}
		exit(runOperator(ctx, p))
	case "declare":
		if err := ownFlags(); err != nil {
			exit(err)
		}
		exit(runDeclare(p))
	case "capture":
		exit(errors.New("capture takes its configuration from the environment, not flags: run `audio-operator capture`"))
	case "api":
		if err := ownFlags(); err != nil {
			exit(err)
		}
		exit(runAPI(ctx, p))
	default:
		run, ok := modes.ByName[mode]
		if !ok {
			exit(fmt.Errorf("unknown mode %q: none runs the operator; the others are declare, api, capture, pipewire, wireplumber, graph-answers, endpoints-registered", mode))
		}
		stop() // the supervising modes forward signals themselves
		env := modes.ProcessEnv()
		env.Declaration = filepath.Join(p.pipewireDir, pipewire.DeclarationFile)
		os.Exit(run(context.Background(), args, env))
	}
}

func exit(err error) {
	if err != nil {
		klog.Background().Error(err, "audio-operator failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
	os.Exit(0)
}

func (p paths) hardware() audio.Hardware {
	h := audio.Hardware{DevSnd: p.devSnd, Sysfs: p.sysfs}
	if p.recorded != "" {
		h.Opener = alsa.NewDumpDir(p.recorded)
	}
	return h
}

// version is the release, set at build time with -ldflags "-X main.version=...".
var version = "dev"

// layoutReadTimeout bounds each Sink read of the declare container: the
// pod starts on the hardware's layouts rather than wait for an API server
// that does not answer.
const layoutReadTimeout = 3 * time.Second

func runDeclare(p paths) error {
	if os.Getenv("NODE_NAME") == "" {
		return errors.New("NODE_NAME must be set: every output's name starts with it (deploy/audio/operator.yaml sets it from the downward API)")
	}
	logger := klog.Background()
	_, mediaBus := os.LookupEnv("DBUS_SYSTEM_BUS_ADDRESS")
	cfg := audio.DeclareConfig{
		Hardware: p.hardware(), Node: os.Getenv("NODE_NAME"),
		PipeWireDir: p.pipewireDir, WirePlumberDir: p.wireplumberDir, MediaBus: mediaBus,
		ALSAPath: p.alsaPath, Rate: p.rate,
	}
	// The Sinks' layouts come from the API server; with no client at all
	// (no kubeconfig, not in a pod) every output takes its hardware's.
	if rc, err := kubeclient.Config(p.kubeconfig, "audio-operator/declare"); err != nil {
		logger.Info("No API server to read Sink layouts from; every output takes its hardware layout", "reason", err.Error())
	} else if dyn, err := dynamic.NewForConfig(rc); err != nil {
		logger.Info("No API client to read Sink layouts with; every output takes its hardware layout", "reason", err.Error())
	} else {
		cfg.SpecLayouts = func(sinks []string) (map[string][]string, error) {
			return objects.ReadLayouts(context.Background(), dyn, sinks, layoutReadTimeout)
		}
	}
	res, err := audio.Declare(cfg)
	for _, problem := range res.Problems {
		logger.Info("Declare problem", "problem", problem)
	}
	if err != nil {
		return err
	}
	logger.Info("Declared outputs", "outputs", len(res.Endpoints), "declaration", res.Declaration, "wireplumber", res.Fragments, "mediaBus", mediaBus)
	return nil
}

func runOperator(ctx context.Context, p paths) error {
	node := os.Getenv("NODE_NAME")
	if node == "" {
		return errors.New("NODE_NAME must be set (deploy/audio/operator.yaml sets it from the downward API)")
	}
	procmem.Fit(ctx) // the Go memory limit from the container's; start-up memory given back
	reg, err := metricsserver.Start(ctx, os.Getenv("METRICS_ADDRESS"))
	if err != nil {
		return err
	}
	metricsserver.BuildInfo(reg, "audio-operator", version)
	rc, err := kubeclient.Config(p.kubeconfig, "audio-operator")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	// The first pass creates a Sink or Source per endpoint and writes each
	// one's status: client-go's default 5 requests a second would spread
	// that over several seconds on a machine with many outputs.
	objRC := rest.CopyConfig(rc)
	objRC.QPS, objRC.Burst = 20, 60
	dyn, err := dynamic.NewForConfig(objRC)
	if err != nil {
		return err
	}
	runtime := os.Getenv("PIPEWIRE_RUNTIME_DIR")
	if runtime == "" {
		runtime = os.Getenv("XDG_RUNTIME_DIR")
	}
	return audio.Run(ctx, audio.Config{
		Node: node, KubeClient: client, Hardware: p.hardware(),
		Remote: pipewire.Remote{RuntimeDir: runtime}, PipeWireDir: p.pipewireDir, Objects: dyn,
		DRA: dra.Options{
			RegistrarDir: p.registrar, PluginDir: filepath.Join(p.plugins, audio.DriverName), CDIDir: p.cdi,
			PodUID: types.UID(os.Getenv("POD_UID")),
		},
		Registerer: reg,
		// The media bus, when the claim delivered one: its CDI edits set
		// DBUS_SYSTEM_BUS_ADDRESS in every container that names the
		// claim, this one included.
		BusAddress: os.Getenv(bluez.AddressEnv),
	})
}
