//go:build linux

package ledger

import (
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// minorFaults returns the process's minor page faults so far (-1: not counted here).
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Minflt
}

// firstTouch maps the file at path (in the page cache: just written) and returns the
// mean time of the first read of n random 4 KiB pages of it: what a page of the ledger
// file not touched since Open costs the first read that meets it (0: not measured).
func firstTouch(path string, n int) time.Duration {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() < 1<<20 {
		return 0
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return 0
	}
	defer syscall.Munmap(m)
	_ = syscall.Madvise(m, syscall.MADV_RANDOM) // as bbolt maps it
	pages := len(m) / 4096
	sum := 0
	start := time.Now()
	for range n {
		sum += int(m[rand.IntN(pages)*4096])
	}
	elapsed := time.Since(start)
	touchSink += sum
	return elapsed / time.Duration(n)
}

// touchSink keeps firstTouch's reads from being optimized away.
var touchSink int
