//go:build !linux

package ledger

import (
	"errors"
	"math"
	"os"
)

// walSupported: the write-ahead log is built for Linux only; elsewhere every commit
// fsyncs the bbolt file as bbolt does.
const walSupported = false

func addressBudget() int64 { return math.MaxInt64 } // no log to map for

func fdatasync(f *os.File) error { return f.Sync() }

func tryLock(*os.File) (bool, error) {
	return false, errors.New("ledger: write-ahead log: not supported on this system")
}

func fileID(*os.File) (uint64, error) { return 0, nil }
