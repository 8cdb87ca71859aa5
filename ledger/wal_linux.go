package ledger

import (
	"math"
	"os"
	"strconv"
	"syscall"
)

// walSupported: the write-ahead log needs fdatasync, flock and a 64-bit address space
// (its file is mapped with room to grow, see walMapBytes).
const walSupported = strconv.IntSize == 64

// addressBudget is the most address space the log's mapping may take: half of the
// process's address-space limit (RLIMIT_AS, ulimit -v), so that the rest of the process,
// the Go heap growing in it, keeps the other half; math.MaxInt64 without a limit.
func addressBudget() int64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil || r.Cur >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(r.Cur / 2)
}

// fdatasync flushes f's data (and the metadata needed to read it back) to the disk.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// tryLock takes an exclusive advisory lock on f without waiting; false: another open
// file holds it.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

// fileID returns the device and inode of the file f: a log's records belong to the ledger
// file of its header, not to a file that replaced it.
func fileID(f *os.File) (uint64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, nil
	}
	return uint64(st.Dev)<<40 ^ uint64(st.Ino), nil
}
