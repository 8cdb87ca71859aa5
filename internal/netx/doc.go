// Package netx holds the gateway's one rule for which hosts are dialled directly rather
// than through a proxy from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY): localhost
// and loopback, private (RFC 1918, IPv6 ULA), link-local, unspecified and CGNAT
// (100.64.0.0/10, where Tailscale puts its nodes) addresses. A proxy from the environment
// cannot reach a LAN or Tailscale peer (Hermes #78397), so every outbound HTTP client of
// the gateway (gateway send, the a2a relay agent, the chat backends) uses this rule.
//
// # Imports
//
// Standard library only.
package netx
