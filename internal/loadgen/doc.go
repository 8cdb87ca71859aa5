// Package loadgen is the load generator behind `gateway bench`: it drives an
// A2A JSON-RPC endpoint with message/send (v0.3) or SendMessage (v1.0)
// requests, optionally streamed over SSE, from a fixed number of concurrent
// workers, and reports throughput, errors by JSON-RPC code and latency
// percentiles computed from the full latency histogram.
//
// Absolute figures drift by ±30 % on shared VMs, so [Compare] benchmarks the
// target and an in-process bare net/http JSON-RPC echo server
// ([StartBaseline]) in alternating rounds and reports their ratio, which is
// the figure to quote.
//
// [Burst] is the busy-rejection benchmark (perf anchor G7): waves of N sends
// released at once on one contextId over pre-established connections, each
// answer timed from just before its write; with a baseline, each wave is
// repeated against the bare echo, the client-side floor of the machine for
// such a burst.
//
// # Imports
//
// The standard library and internal/netx (the one direct-dial rule). The a2a-go peer
// of `make bench` is the separate main package a2agoecho, which is not shipped.
//
// # Caveats
//
//   - The load generator shares the machine with the server it measures. On a
//     2-core box the client's own CPU use caps the figures; the baseline ratio
//     cancels most of that out because both sides pay it.
//   - A request counts when it completes inside the measurement window (after
//     the warmup, before the deadline). No request starts after the deadline;
//     those still in flight then are not counted and may finish for up to a
//     second (or the request timeout, if shorter) before they are cancelled.
//   - A stream's latency stops at its terminal event. The worker then waits up
//     to 25 ms for the server to close the stream so that the connection can be
//     reused; a server that keeps streams open after the terminal event loses
//     that time from its throughput, not from its latency.
//   - Throughput ([Report.RPS]) and the latency percentiles cover successful
//     requests only; failed requests are counted by code and have their own
//     percentiles.
package loadgen
