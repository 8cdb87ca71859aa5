package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// procSample is what /proc says of a process: its resident set and CPU time used.
type procSample struct {
	rss int64         // bytes
	cpu time.Duration // user + system
}

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTick = 100

// readProc samples process pid (Linux /proc).
func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	// The fields after the command (which may hold spaces) start after its ')'.
	f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	if len(f) < 22 {
		return procSample{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseInt(string(f[11]), 10, 64) // field 14
	stime, _ := strconv.ParseInt(string(f[12]), 10, 64) // field 15
	pages, _ := strconv.ParseInt(string(f[21]), 10, 64) // field 24: rss in pages
	return procSample{
		rss: pages * int64(os.Getpagesize()),
		cpu: time.Duration(utime+stime) * time.Second / clockTick,
	}, nil
}

// peakRSS samples pid's resident set every interval until ctx ends and returns the
// largest seen (wait for the returned func).
func peakRSS(ctx context.Context, pid int, interval time.Duration) func() int64 {
	var (
		wg   sync.WaitGroup
		peak int64
	)
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if s, err := readProc(pid); err == nil {
				peak = max(peak, s.rss)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() int64 { wg.Wait(); return peak }
}

// dirBytes is the total size of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
