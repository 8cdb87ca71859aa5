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
// It prints one line, "fdatasync_ms p50 P p90 Q (N records of S bytes); after 1ms idle
// p50 P2 p90 Q2", and exits 1 on an error (DIR not writable, a failed fdatasync). Its
// temporary file is removed. The first figures are of fdatasyncs back to back (as the
// issue measured "a 4 KiB fdatasync"); the second of fdatasyncs each after the thread
// slept 1 ms, as a gateway at concurrency 1 issues them between requests: on a VM whose
// host's I/O thread sleeps when idle, those cost about twice as much (0.37 against
// 0.17 ms where this was written).
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
	lat, err := probe(flag.Arg(0), *n, *size, 0)
	var idle []time.Duration
	if err == nil {
		idle, err = probe(flag.Arg(0), *n, *size, time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsyncprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("fdatasync_ms p50 %.3f p90 %.3f (%d records of %d bytes); after 1ms idle p50 %.3f p90 %.3f\n",
		ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), *n, *size, ms(idle[len(idle)/2]), ms(idle[len(idle)*9/10]))
}

// probe writes n records of size bytes, one after another, into a file in dir grown
// (written with zeros and fdatasync'd) beforehand, fdatasyncs after each (having slept
// idle first, when not 0), and returns the fdatasync latencies, sorted.
func probe(dir string, n, size int, idle time.Duration) (_ []time.Duration, err error) {
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
		if idle > 0 {
			time.Sleep(idle) // what is measured is the fdatasync after a pause, not an order
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
