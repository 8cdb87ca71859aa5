package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/peers"
)

// PeerConfig is one entry of the config file's `peers:` list. A peer may be called by us
// (url, token / token-env: used by `gateway send`), call us (accept-tokens /
// accept-token-envs: the bearer tokens it presents, several for rotation), or both.
type PeerConfig struct {
	Name            string   `yaml:"name"`
	URL             string   `yaml:"url"`
	Token           string   `yaml:"token"`
	TokenEnv        string   `yaml:"token-env"`
	AcceptTokens    []string `yaml:"accept-tokens"`
	AcceptTokenEnvs []string `yaml:"accept-token-envs"`
}

// Peer is a configured peer with its secrets read from the environment (the peer
// directory's type, so that `gateway send` resolves targets against the config).
type Peer = peers.Peer

// loadPeersFile reads the `peers:` list of the config file at path (none: nil).
func loadPeersFile(path string, lookup func(string) (string, bool)) ([]Peer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	node, ok := top["peers"]
	if !ok || node.Kind == 0 || node.Tag == "!!null" {
		return nil, nil
	}
	return parsePeers(path, &node, lookup)
}

// parsePeers reads the `peers:` node of a config file and resolves the tokens named by
// environment variables. Every problem is reported; a variable that is named but unset
// is an error (a peer that silently lost its token would be refused or, worse, unauth'd).
func parsePeers(path string, node *yaml.Node, lookup func(string) (string, bool)) ([]Peer, error) {
	var raw []PeerConfig
	if err := node.Decode(&raw); err != nil {
		return nil, fmt.Errorf("config file %s: peers: %w (want a list of {name, url, token, token-env, accept-tokens, accept-token-envs})", path, err)
	}
	var errs []error
	seen := map[string]bool{}
	tokens := map[string]string{} // inbound token -> peer, so one token never names two peers
	out := make([]Peer, 0, len(raw))
	for i, pc := range raw {
		where := fmt.Sprintf("config file %s: peers[%d]", path, i)
		name := strings.TrimSpace(pc.Name)
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("%s: name is required", where))
			continue
		case !validPeerName(name):
			errs = append(errs, fmt.Errorf("%s: name %q: use letters, digits, '-', '_' and '.' only (it is typed as a `gateway send` target)", where, name))
			continue
		case seen[strings.ToLower(name)]:
			errs = append(errs, fmt.Errorf("%s: name %q is used twice (names are case-insensitive)", where, name))
			continue
		}
		seen[strings.ToLower(name)] = true
		p, perrs := resolvePeer(pc, name, where+" ("+name+")", lookup, tokens)
		errs = append(errs, perrs...)
		out = append(out, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// resolvePeer builds the peer of one `peers:` entry named name (where says which, for
// the errors): its url checked, its tokens read from the environment, each accepted
// token long and naming this peer only (tokens maps the tokens seen so far to their
// peer, and gets this peer's).
func resolvePeer(pc PeerConfig, name, where string, lookup func(string) (string, bool), tokens map[string]string) (Peer, []error) {
	var errs []error
	p := Peer{Name: name, URL: strings.TrimSpace(pc.URL)}
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: url %q: want http(s)://host[:port]/path", where, p.URL))
		}
	}
	if pc.Token != "" && pc.TokenEnv != "" {
		errs = append(errs, fmt.Errorf("%s: set token or token-env, not both", where))
	}
	p.Token = pc.Token
	if pc.TokenEnv != "" {
		v, ok := lookup(pc.TokenEnv)
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("%s: token-env %s is not set", where, pc.TokenEnv))
		}
		p.Token = v
	}
	p.Accept = append(p.Accept, pc.AcceptTokens...)
	for _, env := range pc.AcceptTokenEnvs {
		v, ok := lookup(env)
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("%s: accept-token-envs: %s is not set", where, env))
			continue
		}
		p.Accept = append(p.Accept, v)
	}
	for _, tok := range p.Accept {
		if len(tok) < 16 {
			errs = append(errs, fmt.Errorf("%s: an accepted token is shorter than 16 characters; use a long random token", where))
		}
		if other, dup := tokens[tok]; dup && other != name {
			errs = append(errs, fmt.Errorf("%s: an accepted token is also accepted for peer %q; the token alone must name the peer", where, other))
		}
		tokens[tok] = name
	}
	if p.URL == "" && len(p.Accept) == 0 {
		errs = append(errs, fmt.Errorf("%s: give a url (to send to it) or accept-tokens (to let it call us), or both", where))
	}
	return p, errs
}

// validPeerName is the service's rule for a peer name (conversations.ValidPeerName).
func validPeerName(s string) bool { return conversations.ValidPeerName(s) }
