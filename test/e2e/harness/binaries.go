// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/liken-sh/operators/internal/supervise"
)

// EnvBinDir is the environment variable [Start] reads when Options.BinDir is
// empty: a directory holding etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager.
const EnvBinDir = "LIKEN_CONTROL_PLANE_BIN"

// modulePath identifies this repository's go.mod while walking up, so that a
// nested module (or a go.mod above the checkout) is not mistaken for it.
const modulePath = "github.com/liken-sh/operators"

var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}

// buildMu serialises runs of the build script within one process: tests
// that start clusters in parallel would otherwise start one build each.
var (
	buildMu  sync.Mutex
	builtDir string
)

// findBinDir resolves the binary directory: explicit option, then the
// environment, then the build script (which returns at once when its cache
// is complete).
func findBinDir(ctx context.Context, opt string, logf func(string, ...any)) (string, error) {
	dir := opt
	if dir == "" {
		dir = os.Getenv(EnvBinDir)
	}
	if dir == "" {
		var err error
		if dir, err = buildBinaries(ctx, logf); err != nil {
			return "", err
		}
	}
	var missing []string
	for _, b := range requiredBinaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("harness: binary directory %s lacks %s", dir, strings.Join(missing, ", "))
	}
	return dir, nil
}

// BinDir returns the directory [Start] takes its binaries from when
// Options.BinDir is empty: $LIKEN_CONTROL_PLANE_BIN, else the one
// hack/build-control-plane.sh prints (building first if its cache lacks
// anything). logf, if not nil, receives the progress line of a build.
func BinDir(ctx context.Context, logf func(string, ...any)) (string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return findBinDir(ctx, "", logf)
}

// Kubectl returns the path of the kubectl built beside the control-plane
// binaries in [BinDir], the same Kubernetes version as the API server.
func Kubectl(ctx context.Context, logf func(string, ...any)) (string, error) {
	dir, err := BinDir(ctx, logf)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubectl")
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("harness: no executable kubectl in %s", dir)
	}
	return path, nil
}

// buildBinaries runs hack/build-control-plane.sh and returns the last line
// of its output. Its stderr (progress of a possibly long build) is passed
// through to ours.
func buildBinaries(ctx context.Context, logf func(string, ...any)) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtDir != "" {
		return builtDir, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "build-control-plane.sh")
	logf("harness: binaries from %s (instant when cached; a cold build takes about 15 to 20 minutes)", script)
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	// The script runs go build in children of its own. Killing only bash
	// on cancellation would leave those compiling, so it gets its own
	// process group and the whole group is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	b, err := supervise.StartBound(cmd)
	if err == nil {
		err = b.Wait()
	}
	if err != nil {
		return "", fmt.Errorf("harness: %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("harness: %s printed no binary directory", script)
	}
	builtDir = dir
	return dir, nil
}

// ModuleRoot returns the root directory of the github.com/liken-sh/operators
// module, found by walking up from the working directory to the go.mod that
// declares it. It fails when the working directory is outside the module.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(data, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: no go.mod for " + modulePath + " above the working directory; set " + EnvBinDir)
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}
