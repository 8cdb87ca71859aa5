package locking

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// ErrRedisURL: a Redis URL that [ParseURL] refuses; the error says why (never with the
// URL's password).
var ErrRedisURL = errors.New("invalid redis URL")

// ParseURL reads a Redis URL into the connection fields of a [RedisConfig] (Addr,
// Username, Password, DB, TLS); the lease fields keep their zero values (defaults):
//
//	redis://[[user]:password@]host[:port][/db]    plain TCP (port 6379, db 0 by default)
//	rediss://[[user]:password@]host[:port][/db]   TLS (TLS 1.2 or later, the host's
//	                                              certificate checked against the system roots)
//
// Query options (go-redis's dial_timeout, pool_size, ...) are refused: the lease sets its
// own timeouts ([RedisConfig.OpTimeout]). Errors wrap [ErrRedisURL] and never contain the
// password.
func ParseURL(raw string) (RedisConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole URL, password included: say less.
		return RedisConfig{}, fmt.Errorf("%w: not a URL (want redis://[user:password@]host[:port][/db] or rediss://…)", ErrRedisURL)
	}
	switch {
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return RedisConfig{}, fmt.Errorf("%w: scheme %q: want redis:// or rediss:// (TLS)", ErrRedisURL, u.Scheme)
	case u.Host == "":
		return RedisConfig{}, fmt.Errorf("%w: no host (want redis://[user:password@]host[:port][/db])", ErrRedisURL)
	case u.RawQuery != "" || u.ForceQuery:
		return RedisConfig{}, fmt.Errorf("%w: query options are not supported (the lease sets its own timeouts)", ErrRedisURL)
	case u.Fragment != "":
		return RedisConfig{}, fmt.Errorf("%w: a #fragment is not allowed", ErrRedisURL)
	}
	o, err := redis.ParseURL(u.String())
	if err != nil {
		// go-redis's messages name the database or path, not the credentials.
		return RedisConfig{}, fmt.Errorf("%w: %v", ErrRedisURL, err)
	}
	if o.DB < 0 {
		return RedisConfig{}, fmt.Errorf("%w: database %d is negative", ErrRedisURL, o.DB)
	}
	return RedisConfig{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLS: o.TLSConfig}, nil
}
