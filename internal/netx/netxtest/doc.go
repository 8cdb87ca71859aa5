// Package netxtest checks that an outbound HTTP client follows the direct-dial rule of
// package netx, so that a caller that stops using netx fails its own test.
//
// # Imports
//
// Standard library only (testing).
package netxtest
