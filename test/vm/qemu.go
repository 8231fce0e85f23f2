// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"
)

// QemuBinary is qemu's x86-64 system emulator (package qemu-system-x86).
const QemuBinary = "qemu-system-x86_64"

// ShareTag is the 9p mount tag of the results share; the guest's /init
// mounts it on /out.
const ShareTag = "out"

// BootSpec is one boot of the guest.
type BootSpec struct {
	// Vmlinuz and Initramfs are the kernel image and the cpio archive.
	Vmlinuz, Initramfs string
	// Share is the host directory exported to the guest over 9p.
	Share string
	// Append is added to the kernel command line.
	Append string
	// Timeout bounds the whole boot; timeout(1) sends qemu SIGTERM then,
	// and SIGKILL 10 s later.
	Timeout time.Duration
	// Memory is the guest's RAM in MiB; zero means 1536.
	Memory int
	// Console receives the guest's serial console.
	Console io.Writer
}

// Boot runs qemu until the guest powers off (the /init ends with
// poweroff -f, and a kernel panic reboots, which -no-reboot turns into an
// exit) or the timeout ends it. There is no KVM on the machines this runs
// on, so the CPU is emulated (TCG); -cpu max gives the guest AES-NI and
// the other instructions the kernel's crypto modules want. One vCPU: with
// two, qemu 7.2's multi-threaded TCG now and then runs code the kernel is
// patching on the other vCPU, and the guest dies at boot with an oops
// (int3 in sched_clock_cpu, once in about ten boots here). The machine
// has the devices the guest tests need: an Intel HDA controller with a
// duplex codec (snd-hda-intel; sound goes to qemu's null backend) and the
// virtio 9p share. An error means qemu failed, exited non-zero, or timed
// out (the message says which).
func Boot(ctx context.Context, b BootSpec) error {
	mem := b.Memory
	if mem == 0 {
		mem = 1536
	}
	secs := int(b.Timeout / time.Second)
	if secs < 1 {
		return fmt.Errorf("boot timeout %s is under a second", b.Timeout)
	}
	args := []string{
		"--kill-after=10", strconv.Itoa(secs),
		QemuBinary,
		"-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", strconv.Itoa(mem),
		"-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", b.Vmlinuz, "-initrd", b.Initramfs,
		"-append", "console=ttyS0 quiet panic=-1 " + b.Append,
		"-audiodev", "none,id=snd", "-device", "intel-hda", "-device", "hda-duplex,audiodev=snd",
		"-nic", "none",
		"-virtfs", "local,path=" + b.Share + ",mount_tag=" + ShareTag + ",security_model=none,id=" + ShareTag,
	}
	cmd := exec.CommandContext(ctx, "timeout", args...)
	cmd.Stdout = b.Console
	cmd.Stderr = b.Console
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 124 || ctx.Err() != nil {
		return fmt.Errorf("the guest did not power off within %s", b.Timeout)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", QemuBinary, err)
	}
	return nil
}
