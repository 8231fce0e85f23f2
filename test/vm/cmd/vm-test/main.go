// SPDX-License-Identifier: Apache-2.0

// Command vm-test is the VM test tier (hack/vm-test.sh runs it): it builds
// the guest test binaries, an initramfs and fetches a kernel (package vm),
// boots the guest under qemu, and reports every guest test by name. It
// exits 1 when any guest binary is missing its result, exited non-zero,
// failed or skipped a test, or ran none.
//
// Usage, from the module root:
//
//	go run -trimpath ./test/vm/cmd/vm-test [-cache DIR] [-run alsa,hid] [-timeout 900s] [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/liken-sh/operators/test/vm"
	"github.com/liken-sh/operators/test/vm/guest"
)

func main() {
	// The cache the hack scripts share: $LIKEN_CACHE, else liken under
	// the user's cache directory.
	cacheRoot := os.Getenv("LIKEN_CACHE")
	if cacheRoot == "" {
		dir, _ := os.UserCacheDir()
		cacheRoot = filepath.Join(dir, "liken")
	}
	cache := flag.String("cache", filepath.Join(cacheRoot, "vm"), "where the kernel package is cached")
	only := flag.String("run", "", "comma-separated guests to run (default: all)")
	timeout := flag.Duration("timeout", 900*time.Second, "bound on the guest's whole boot")
	keep := flag.Bool("keep", false, "keep the work directory (initramfs, console log, results)")
	prepare := flag.Bool("prepare", false, "only fetch the kernel and vet and build the guests (warms the caches a later run uses), then exit")
	flag.Parse()
	os.Exit(run(*cache, *only, *timeout, *keep, *prepare))
}

// run runs the tier, or with prepare only its steps before the boot.
func run(cache, only string, timeout time.Duration, keep, prepare bool) int {
	ctx := context.Background()
	start := time.Now()
	step := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("vm-test: "+format+" [%.1fs]\n", append(args, time.Since(step).Seconds())...)
		step = time.Now()
	}
	fail := func(err error) int {
		fmt.Printf("vm-test: FAIL: %v\n", err)
		return 1
	}
	guests, err := pick(only)
	if err != nil {
		return fail(err)
	}
	work, err := os.MkdirTemp("", "liken-vm-test-")
	if err != nil {
		return fail(err)
	}
	if keep {
		fmt.Printf("vm-test: work directory %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}

	k, err := vm.FetchKernel(ctx, cache, func(f string, a ...any) { fmt.Printf("vm-test: "+f+"\n", a...) })
	if err != nil {
		return fail(err)
	}
	logf("kernel %s ready", k.Release)

	stage := &vm.Stage{Dir: filepath.Join(work, "stage")}
	if err := build(ctx, guests, stage); err != nil {
		return fail(err)
	}
	logf("vetted and built %d guest test binaries, the bluetoothd entrypoint and the input relay", len(guests))
	if prepare {
		return 0
	}

	nmod, err := fill(ctx, stage, k, guests)
	if err != nil {
		return fail(err)
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	size, err := stage.Pack(ctx, initrd)
	if err != nil {
		return fail(err)
	}
	os.RemoveAll(stage.Dir)
	logf("initramfs of %d MB with %d modules", size>>20, nmod)

	share := filepath.Join(work, "out")
	if err := os.Mkdir(share, 0o777); err != nil {
		return fail(err)
	}
	consolePath := filepath.Join(work, "console.log")
	var bootErr error
	for attempt := 1; ; attempt++ {
		if bootErr, err = boot(ctx, consolePath, vm.BootSpec{Vmlinuz: k.Vmlinuz(), Initramfs: initrd, Share: share, Timeout: timeout}); err != nil {
			return fail(err)
		}
		data, _ := os.ReadFile(consolePath)
		if attempt == bootAttempts || !vm.PanickedBeforeInit(data) {
			break
		}
		kept := fmt.Sprintf("%s.%d", consolePath, attempt)
		_ = os.Rename(consolePath, kept)
		fmt.Printf("vm-test: the guest kernel panicked before /init ran (boot %d of at most %d, console in %s): an emulation failure, no test ran; booting again\n", attempt, bootAttempts, kept)
	}
	logf("guest ran")

	var names []string
	for _, g := range guests {
		names = append(names, g.Name)
	}
	// Tests are counted by verdict; a binary whose result is a failure
	// without a failed test (it hung, or ran none) counts as one failure.
	passed, failed, broken := 0, 0, 0
	for _, r := range vm.Collect(share, names) {
		for _, t := range r.Tests {
			verdict := "ok  "
			switch t.Verdict {
			case "PASS":
				passed++
			default:
				verdict = t.Verdict
				failed++
			}
			fmt.Printf("%s  %-7s %s (%s)\n", verdict, r.Guest, t.Name, t.Elapsed)
		}
		for _, f := range r.Figures() {
			fmt.Printf("      %-7s %s\n", r.Guest, f)
		}
		if err := r.Err(); err != nil {
			broken++
			fmt.Printf("FAIL  %-7s %v\n--- output of %s.test:\n%s--- end of %s.test\n", r.Guest, strings.ReplaceAll(err.Error(), "\n", "; "), r.Guest, r.Log, r.Guest)
		}
	}
	if bootErr != nil {
		fmt.Printf("vm-test: %v\n", bootErr)
	}
	if bootErr != nil || broken > 0 {
		data, _ := os.ReadFile(consolePath)
		fmt.Printf("--- guest console:\n%s--- end of guest console\n", data)
		failed = max(failed, 1)
	}
	fmt.Printf("vm-test: %d guest tests passed, %d failed (%d of %d guest binaries failed), in %.0fs\n",
		passed, failed, broken, len(guests), time.Since(start).Seconds())
	if bootErr != nil || broken > 0 {
		return 1
	}
	return 0
}

// bootAttempts bounds the boots of one run: a boot whose kernel panicked
// before /init ran (vm.PanickedBeforeInit) is repeated, twice at most.
const bootAttempts = 3

// boot runs one boot of spec with its serial console written to path
// (created or truncated) and shown as progress; bootErr is vm.Boot's, err
// a failure to create the console file.
func boot(ctx context.Context, path string, spec vm.BootSpec) (bootErr, err error) {
	console, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer console.Close()
	spec.Console = io.MultiWriter(console, &progress{})
	return vm.Boot(ctx, spec), nil
}

// pick selects the guests named in only (comma-separated), all when empty.
func pick(only string) ([]vm.Guest, error) {
	if only == "" {
		return vm.Guests, nil
	}
	var out []vm.Guest
	for _, n := range strings.Split(only, ",") {
		i := slices.IndexFunc(vm.Guests, func(g vm.Guest) bool { return g.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("no guest %q", n)
		}
		out = append(out, vm.Guests[i])
	}
	return out, nil
}

// build vets the guest packages with the vmtier tag, and compiles the
// guest test binaries into /tests, and the bluetoothd entrypoint and the
// input relay into their guest paths: static (CGO_ENABLED=0, the guest has only the libraries
// staged for the host programs), -trimpath like every build here, symbols
// stripped to keep the initramfs small.
func build(ctx context.Context, guests []vm.Guest, stage *vm.Stage) error {
	tests := filepath.Join(stage.Dir, "tests")
	if err := os.MkdirAll(tests, 0o755); err != nil {
		return err
	}
	var pkgs []string
	for _, g := range guests {
		pkgs = append(pkgs, g.Package)
	}
	// hack/test.sh vets without the vmtier tag; the guest tests are
	// vetted here.
	if err := goCmd(ctx, append([]string{"vet", "-trimpath", "-tags", "vmtier"}, pkgs...)...); err != nil {
		return err
	}
	if err := goCmd(ctx, append([]string{"test", "-c", "-trimpath", "-tags", "vmtier", "-ldflags=-s -w", "-o", tests + "/"}, pkgs...)...); err != nil {
		return err
	}
	for _, g := range guests {
		if _, err := os.Stat(filepath.Join(tests, g.Name+".test")); err != nil {
			return fmt.Errorf("guest %s: no test binary: %w", g.Name, err)
		}
	}
	if err := goCmd(ctx, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(stage.Dir, guest.InputRelay), "./cmd/bluetooth-input-relay"); err != nil {
		return err
	}
	return goCmd(ctx, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(stage.Dir, guest.Entrypoint), "./cmd/bluetoothd")
}

func goCmd(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// fill stages everything but the test binaries and returns the number of
// module files staged.
func fill(ctx context.Context, stage *vm.Stage, k vm.Kernel, guests []vm.Guest) (int, error) {
	if err := stage.AddBusybox(ctx); err != nil {
		return 0, err
	}
	n, err := stage.AddModules(ctx, k, vm.Modules)
	if err != nil {
		return 0, err
	}
	for _, p := range vm.Programs {
		if err := stage.AddProgram(ctx, p); err != nil {
			return 0, err
		}
	}
	if _, err := stage.AddLibraries(ctx, vm.Libraries); err != nil {
		return 0, err
	}
	for _, f := range vm.Files {
		if err := stage.CopyFile(f, f); err != nil {
			return 0, err
		}
	}
	for _, d := range vm.Trees {
		if _, err := stage.AddTree(d); err != nil {
			return 0, err
		}
	}
	for path, data := range vm.Written {
		if err := stage.WriteFile(path, []byte(data), 0o644); err != nil {
			return 0, err
		}
	}
	var names []string
	for _, g := range guests {
		names = append(names, g.Name)
	}
	return n, stage.WriteFile("/init", []byte(vm.InitScript(names)), 0o755)
}

// progress passes on the console's "vm-test:" lines as they come; a
// line may arrive in pieces.
type progress struct{ partial []byte }

func (p *progress) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := slices.Index(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(p.partial[:i+1])
		p.partial = p.partial[i+1:]
		if rest, ok := strings.CutPrefix(strings.TrimLeft(line, "\r"), "vm-test: "); ok {
			fmt.Print("  guest: " + strings.TrimRight(rest, "\r\n") + "\n")
		}
	}
}
