package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The rule of every command: help that was asked for (help, -h, -help, --help) goes to
// stdout with exit status 0; a mistake on the command line is one line on stderr with
// exit status 2 (main prints the returned error), naming 'gateway CMD --help'.

// isHelpArg reports whether a is one of the spellings that ask for help.
func isHelpArg(a string) bool {
	switch a {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// unknownCommandError is a command name that cmd ("" at the top level, else
// "conversations" or "ledger") does not have; Commands are the ones it has.
type unknownCommandError struct {
	Parent, Name string
	Commands     []string
}

// As makes errors.As find a usageError (exit status 2) in e.
func (e *unknownCommandError) As(target any) bool { return asUsageError(e, target) }

func (e *unknownCommandError) Error() string {
	prefix, help := "", "gateway --help"
	if e.Parent != "" {
		prefix, help = e.Parent+": ", "gateway "+e.Parent+" --help"
	}
	return fmt.Sprintf("%sunknown command %q; commands: %s (see '%s')", prefix, e.Name, strings.Join(e.Commands, ", "), help)
}

// flagError is a mistake in the flags of the command Cmd ("serve", "conversations
// list"): an unknown flag (Flag, with Suggest: an existing flag of a similar name or
// meaning, or "") or one the flag package refused (Err: a bad or missing value, bad
// syntax).
type flagError struct {
	Cmd, Flag, Suggest string
	Err                error
}

func (e *flagError) Error() string {
	var b strings.Builder
	b.WriteString(e.Cmd + ": ")
	switch {
	case e.Flag != "":
		fmt.Fprintf(&b, "unknown flag --%s", e.Flag)
		if e.Suggest != "" {
			fmt.Fprintf(&b, " (did you mean --%s?)", e.Suggest)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	fmt.Fprintf(&b, "; see 'gateway %s --help'", e.Cmd)
	return b.String()
}

func (e *flagError) Unwrap() error { return e.Err }

// As makes errors.As find a usageError (exit status 2) in e.
func (e *flagError) As(target any) bool { return asUsageError(e, target) }

// asUsageError sets target to the usageError of err when it points to one.
func asUsageError(err error, target any) bool {
	u, ok := target.(*usageError)
	if ok {
		*u = usageError{err.Error()}
	}
	return ok
}

// newFlagSet is a flag set that prints nothing itself: parseFlags prints the help and
// returns the errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs for the command cmd and returns the positional
// arguments. With interspersed, flags may stand among them ("show CTX --json"); else
// the first positional argument ends the flags, as does "--" always. -h or --help
// calls help (which prints to stdout) and returns flag.ErrHelp; any other mistake is a
// *flagError, printed nowhere.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, interspersed bool, help func()) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if name, ok := unknownFlag(fs, args, interspersed); ok {
		return nil, &flagError{Cmd: cmd, Flag: name, Suggest: suggestFlag(fs, name)}
	}
	var positional []string
	var err error
	if interspersed {
		positional, err = parseInterspersed(fs, args)
	} else {
		err = fs.Parse(args)
		positional = fs.Args()
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		help()
		return nil, err
	case err != nil:
		return nil, &flagError{Cmd: cmd, Err: err}
	}
	return positional, nil
}

// unknownFlag returns the first argument that names a flag fs does not define (-h and
// -help aside: they ask for help). It reads args as fs.Parse does: a flag's value is the
// next argument unless the flag is boolean or written --name=value; "--" ends the flags,
// and so does the first positional argument unless interspersed. Bad syntax ("---x",
// "-=x") is left for fs.Parse to report.
func unknownFlag(fs *flag.FlagSet, args []string, interspersed bool) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return "", false
		}
		if len(a) < 2 || a[0] != '-' {
			if !interspersed {
				return "", false
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return "", false
		}
		f := fs.Lookup(name)
		switch {
		case f == nil && (name == "h" || name == "help"):
			return "", false
		case f == nil:
			return name, true
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); (ok && bf.IsBoolFlag()) || hasValue {
			continue
		}
		i++ // the flag's value
	}
	return "", false
}

// flagSynonyms are names people try for a flag, with the flags that mean it; the first
// one the command has is suggested.
var flagSynonyms = map[string][]string{
	"port": {"addr", "server"}, "listen": {"addr"}, "bind": {"addr"}, "host": {"addr", "server"},
	"address": {"addr", "server"}, "url": {"server", "agent-url"}, "endpoint": {"server", "agent-url"},
	"data": {"data-dir"}, "datadir": {"data-dir"}, "dir": {"data-dir"}, "db": {"data-dir"}, "ledger": {"data-dir"},
	"token": {"admin-token"}, "auth": {"admin-token", "token"}, "bearer": {"token", "admin-token"},
	"verbose": {"log-level"}, "v": {"log-level"}, "debug": {"log-level"}, "level": {"log-level"}, "loglevel": {"log-level"},
	"model": {"agent-model"}, "key": {"agent-key-env"}, "api-key": {"agent-key-env"}, "command": {"agent-command"},
	"redis": {"redis-addr"}, "conf": {"config"}, "config-file": {"config"}, "c": {"config", "concurrency"},
	"workers": {"concurrency"}, "parallel": {"concurrency"}, "j": {"concurrency"}, "n": {"limit"},
	"seq": {"at"}, "turn": {"at"}, "context-id": {"context"}, "contextid": {"context"}, "ctx": {"context"},
}

// suggestFlag names the flag of fs that the unknown name probably meant: a synonym, else
// the flag closest to it in edit distance (at most a third of its length, and at least
// 1), else one that it begins; "" when none is close.
func suggestFlag(fs *flag.FlagSet, name string) string {
	name = strings.ToLower(name)
	for _, s := range flagSynonyms[name] {
		if fs.Lookup(s) != nil {
			return s
		}
	}
	best, bestDist := "", max(1, min(3, len(name)/3))+1
	prefixed := ""
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
		if prefixed == "" && len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			prefixed = f.Name
		}
	})
	if best == "" {
		return prefixed
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
