// SPDX-License-Identifier: Apache-2.0

// Command consumer is the workload of the kubelet tier's consumer pods: it
// reports what the container runtime gave its container (one JSON line on
// stdout: the environment, every node under /dev, every mount point) and
// then either waits for SIGTERM (mode "report") or plays a tone through
// PipeWire (mode "tone"): a sine of HZ (default 440), 48 kHz S16 in every
// channel of CHANNELS (2, stereo, by default; 4 is front and rear pairs,
// FL,FR,RL,RR, for a claim's combined sink), fed to
// pw-cat --playback, which connects to $PIPEWIRE_REMOTE and targets
// $PIPEWIRE_NODE as every PipeWire stream does. When pw-cat ends (its
// PipeWire went away) it is started again after 200 ms, and a line says
// so, so the stream resumes once PipeWire is back.
//
// Usage: consumer report|tone [HZ [CHANNELS]]
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/test/kubelettier/report"
)

func main() {
	freq, channels := 440.0, 2
	switch {
	case len(os.Args) == 2 && (os.Args[1] == "report" || os.Args[1] == "tone"):
	case (len(os.Args) == 3 || len(os.Args) == 4) && os.Args[1] == "tone":
		f, err := strconv.ParseFloat(os.Args[2], 64)
		if err != nil || f < 20 || f > 20000 {
			fmt.Fprintf(os.Stderr, "consumer: tone %q is not a frequency from 20 to 20000 Hz\n", os.Args[2])
			os.Exit(2)
		}
		freq = f
		if len(os.Args) == 4 {
			if os.Args[3] != "2" && os.Args[3] != "4" {
				fmt.Fprintf(os.Stderr, "consumer: %q channels, want 2 or 4\n", os.Args[3])
				os.Exit(2)
			}
			channels, _ = strconv.Atoi(os.Args[3])
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: consumer report|tone [HZ [CHANNELS]]")
		os.Exit(2)
	}
	line, err := json.Marshal(collect())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("report %s\n", line)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if os.Args[1] == "tone" {
		go tone(freq, channels)
	}
	<-stop
}

func collect() report.Report {
	r := report.Report{Env: map[string]string{}, Dev: map[string]string{}}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		r.Env[k] = v
	}
	_ = filepath.WalkDir("/dev", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "/dev" {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			r.Dev[p] = fmt.Sprintf("c %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		case unix.S_IFBLK:
			r.Dev[p] = fmt.Sprintf("b %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		case unix.S_IFDIR:
			r.Dev[p] = "d"
		case unix.S_IFLNK:
			t, _ := os.Readlink(p)
			r.Dev[p] = "l " + t
		default:
			r.Dev[p] = "f"
		}
		return nil
	})
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(l); len(f) > 4 {
				r.Mounts = append(r.Mounts, f[4])
			}
		}
	}
	return r
}

// tone runs pw-cat with a sine of freq Hz on its standard input, forever.
func tone(freq float64, channels int) {
	const rate = 48000
	frame := make([]byte, 2*channels*rate/10) // 100 ms of S16
	args := []string{"--playback", "--rate", "48000", "--channels", strconv.Itoa(channels), "--format", "s16", "--raw"}
	if channels == 4 {
		args = append(args, "--channel-map", "FL,FR,RL,RR")
	}
	var n int
	for {
		cmd := exec.Command("/usr/bin/pw-cat", append(args, "-")...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		in, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Printf("tone: pw-cat: %v\n", err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		fmt.Println("tone: playing")
		for {
			for i := 0; i < len(frame); i += 2 * channels {
				v := int16(8000 * math.Sin(2*math.Pi*freq*float64(n)/rate))
				for c := range channels {
					binary.LittleEndian.PutUint16(frame[i+2*c:], uint16(v))
				}
				n++
			}
			if _, err := in.Write(frame); err != nil {
				break
			}
		}
		err = cmd.Wait()
		fmt.Printf("tone: pw-cat ended (%v); again in 200 ms\n", err)
		time.Sleep(200 * time.Millisecond)
	}
}
