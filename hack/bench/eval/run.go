package main

import (
	"bytes"
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

// runMeasured runs argv with stdout to stdoutPath and measures it. Peak RSS
// comes from wait4's rusage of the child itself, which is what
// /usr/bin/time -v reports, without depending on that binary.
func runMeasured(argv []string, stdoutPath string) (sample, []byte, error) {
	out, err := os.Create(stdoutPath)
	if err != nil {
		return sample{}, nil, err
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return sample{}, nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return sample{}, nil, errors.New("no rusage for the child process")
	}
	return sample{
		wall: wall,
		cpu:  time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano()),
		// Linux reports ru_maxrss in KiB.
		maxRSS: ru.Maxrss << 10,
		exit:   cmd.ProcessState.ExitCode(),
	}, stderr.Bytes(), nil
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
