// Command fsyncprobe is the fdatasync probe of `make bench` (issue #16's c=1 target,
// "p50 ≤ 2 fsyncs + 0.3 ms"): it measures what one fdatasync of a small record costs on
// the file system of a directory, the way the ledger's write-ahead log pays it (a record
// written into a file grown ahead of time, then fdatasync'd), and prints the p50 and p90
// in milliseconds.
//
// It is a benchmark tool only: not part of the gateway binary, not shipped or installed.
//
// Usage:
//
//	fsyncprobe [--n 300] [--size 4096] DIR
//
// It prints one line, "fdatasync_ms p50 P p90 Q (N records of S bytes)", and exits 1 on
// an error (DIR not writable, a failed fdatasync). Its temporary file is removed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 300, "fdatasync `N` records")
	size := flag.Int("size", 4096, "of `S` bytes each")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: fsyncprobe [--n N] [--size S] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 || *size < 1 {
		flag.Usage()
		os.Exit(2)
	}
	lat, err := probe(flag.Arg(0), *n, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsyncprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("fdatasync_ms p50 %.3f p90 %.3f (%d records of %d bytes)\n",
		ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), *n, *size)
}

// probe writes n records of size bytes, one after another, into a file in dir grown
// (written with zeros and fdatasync'd) beforehand, fdatasyncs after each, and returns
// the fdatasync latencies, sorted.
func probe(dir string, n, size int) (_ []time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsyncprobe-*")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, f.Close(), os.Remove(f.Name())) }()
	if _, err := f.Write(make([]byte, n*size)); err != nil {
		return nil, err
	}
	if err := fdatasync(f); err != nil {
		return nil, err
	}
	rec := make([]byte, size)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		rec[0] = byte(i + 1)
		if _, err := f.WriteAt(rec, int64(i*size)); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := fdatasync(f); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
