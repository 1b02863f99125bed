package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

// sample is one measured run of a tool.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	maxRSS int64         // bytes, the kernel's peak resident set
	exit   int
}

// measureFlag makes this binary the measuring wrapper (see measureChild).
const measureFlag = "--measure-child"

// runMeasured runs argv with stdout to stdoutPath and measures it through
// a fresh copy of this binary (measureChild). The detour is needed because
// Linux folds the memory of the process a child was forked from into the
// child's ru_maxrss: measured straight from this harness, which has read
// large reports by then, every tool would seem to need at least the
// harness's own peak. The wrapper's few MiB are the floor instead (the
// table prints it).
func runMeasured(argv []string, stdoutPath string) (sample, []byte, error) {
	self, err := os.Executable()
	if err != nil {
		return sample{}, nil, err
	}
	out, err := os.Create(stdoutPath)
	if err != nil {
		return sample{}, nil, err
	}
	defer out.Close()
	report, w, err := os.Pipe()
	if err != nil {
		return sample{}, nil, err
	}
	defer report.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(self, slices.Concat([]string{measureFlag, "--"}, argv)...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the wrapper
	if err := cmd.Start(); err != nil {
		w.Close()
		return sample{}, nil, err
	}
	w.Close()
	var m childMeasurement
	decodeErr := json.NewDecoder(report).Decode(&m)
	if err := cmd.Wait(); err != nil {
		return sample{}, stderr.Bytes(), fmt.Errorf("measuring %s: %v: %s", argv[0], err, firstLine(stderr.Bytes()))
	}
	if decodeErr != nil {
		return sample{}, stderr.Bytes(), fmt.Errorf("measuring %s: no measurement: %v", argv[0], decodeErr)
	}
	return sample{wall: m.Wall, cpu: m.CPU, maxRSS: m.MaxRSS, exit: m.Exit}, stderr.Bytes(), nil
}

// childMeasurement is what the wrapper reports on fd 3.
type childMeasurement struct {
	Wall, CPU time.Duration
	MaxRSS    int64
	Exit      int
}

// measureChild is the wrapper's whole job: run argv with this process's
// stdio, time it, and write its exit status and rusage to fd 3. It returns
// the wrapper's own exit status: 0 unless argv could not be run at all.
func measureChild(argv []string) int {
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "bench eval: "+measureFlag+" needs a command")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintf(os.Stderr, "bench eval: %v\n", err)
		return 2
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "bench eval: no rusage for the child process")
		return 2
	}
	m := childMeasurement{
		Wall: wall,
		CPU:  time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano()),
		// Linux reports ru_maxrss in KiB.
		MaxRSS: ru.Maxrss << 10,
		Exit:   cmd.ProcessState.ExitCode(),
	}
	if err := json.NewEncoder(os.NewFile(3, "measurement")).Encode(m); err != nil {
		fmt.Fprintf(os.Stderr, "bench eval: writing the measurement: %v\n", err)
		return 2
	}
	return 0
}

// medians is the per-field median of several samples; each field is taken
// on its own, so the figures may come from different runs.
type medians struct {
	wall, cpu time.Duration
	maxRSS    int64
	runs      int
}

func medianOf(ss []sample) medians {
	walls := make([]time.Duration, len(ss))
	cpus := make([]time.Duration, len(ss))
	rss := make([]int64, len(ss))
	for i, s := range ss {
		walls[i], cpus[i], rss[i] = s.wall, s.cpu, s.maxRSS
	}
	return medians{wall: median(walls), cpu: median(cpus), maxRSS: median(rss), runs: len(ss)}
}

// median of an odd count is the middle value; of an even count, the lower
// middle one, so it is always an observed value.
func median[T int64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
