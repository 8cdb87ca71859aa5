// Package depcheck enforces the dependency direction of house-style B1: a test runs
// `go list -json ./...` and fails on any import that points up the layer table or pulls a
// driver into a package that must not see it.
package depcheck
