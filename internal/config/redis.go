package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Redis is the Redis connection the file names: litellm_settings.cache_params (type redis)
// and router_settings.redis_*, the two places a LiteLLM config already holds it. Fields left
// unset are taken from the environment (REDIS_URL, REDIS_HOST, ...) by the gateway; a Redis
// named nowhere means none (limits and shared state stay per replica).
type Redis struct {
	// URL is a redis:// or rediss:// URL (it may carry the password, so it is a Secret).
	URL Secret
	// Host and Port name the server when URL is unset; Port 0 means unset.
	Host string
	Port int
	// Username and Password authenticate (Redis ACL user, AUTH password).
	Username string
	Password Secret
	// SSL, when set, says whether to use TLS (cache_params ssl); nil means unset.
	SSL *bool
	// Line is the line of the first key that named the connection (0 when none did).
	Line int
}

// IsSet reports whether the file names a Redis server.
func (r Redis) IsSet() bool { return r.URL.IsSet() || r.Host != "" }

// RedisFailureMode says what limits do while Redis cannot be reached.
type RedisFailureMode string

// The values of general_settings.redis_failure_mode.
const (
	// RedisFailOpen counts limits in the replica (as without Redis) while Redis is down.
	RedisFailOpen RedisFailureMode = "open"
	// RedisFailClosed refuses calls that a limit holds (HTTP 503) while Redis is down.
	RedisFailClosed RedisFailureMode = "closed"
)

// cacheParams reads litellm_settings.cache_params: its connection keys when its type is redis
// (LiteLLM's default type for a proxy cache); its other keys configure LiteLLM's response cache,
// which mcpgw does not have, and are ignored without a warning each.
func (l *loader) cacheParams(n *yaml.Node, r *Redis) {
	const sec = "litellm_settings.cache_params"
	es := l.entries(n, sec, "key")
	for _, e := range es {
		if e.key == "type" {
			if t, ok := l.str(e.v, sec+".type"); ok && !strings.EqualFold(strings.TrimSpace(t), "redis") {
				l.warnf(e.v, "%s.type %q is not redis: mcpgw does not use this cache", sec, t)
				return
			}
		}
	}
	for _, e := range es {
		field := sec + "." + e.key
		switch e.key {
		case "url", "redis_url":
			l.redisString(e, field, r, func(s string) { r.URL = Secret(s) })
		case "host":
			l.redisString(e, field, r, func(s string) { r.Host = strings.TrimSpace(s) })
		case "port":
			l.redisPort(e, field, r)
		case "username":
			l.redisString(e, field, r, func(s string) { r.Username = s })
		case "password":
			l.redisString(e, field, r, func(s string) { r.Password = Secret(s) })
		case "ssl":
			if b, ok := l.boolean(e.v, field); ok && r.SSL == nil {
				r.SSL = &b
			}
		}
	}
}

// routerSettings reads router_settings: redis_url, redis_host, redis_port and redis_password fill
// what cache_params left unset; the router's other keys are LiteLLM's model routing, warned about.
func (l *loader) routerSettings(n *yaml.Node, r *Redis) {
	const sec = "router_settings"
	for _, e := range l.entries(n, sec, "key") {
		field := sec + "." + e.key
		switch e.key {
		case "redis_url":
			l.redisString(e, field, r, func(s string) { r.URL = Secret(s) })
		case "redis_host":
			l.redisString(e, field, r, func(s string) { r.Host = strings.TrimSpace(s) })
		case "redis_port":
			l.redisPort(e, field, r)
		case "redis_password":
			l.redisString(e, field, r, func(s string) { r.Password = Secret(s) })
		default:
			l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, sec, didYouMean(e.key, routerKeys))
		}
	}
}

// redisString reads one string field of the connection into set, unless an earlier source set it.
func (l *loader) redisString(e entry, field string, r *Redis, set func(string)) {
	s, ok := l.str(e.v, field)
	if !ok || strings.TrimSpace(s) == "" {
		return
	}
	before := *r
	set(s)
	if before.URL != "" && r.URL != before.URL || before.Host != "" && r.Host != before.Host ||
		before.Username != "" && r.Username != before.Username || before.Password != "" && r.Password != before.Password {
		*r = before // cache_params, read first, wins
		return
	}
	if r.Line == 0 {
		r.Line = lineOf(e.k)
	}
}

// redisPort reads a port (1-65535) unless an earlier source set one.
func (l *loader) redisPort(e entry, field string, r *Redis) {
	v, ok := l.nonNegInt(e.v, field)
	if !ok {
		return
	}
	if v < 1 || v > 65535 {
		l.errorf(e.v, "%s must be a port number (1-65535)", field)
		return
	}
	if r.Port == 0 {
		r.Port = v
	}
}

// redisFailureMode reads general_settings.redis_failure_mode.
func (l *loader) redisFailureMode(e entry, field string, g *GeneralSettings) {
	s, ok := l.str(e.v, field)
	if !ok {
		return
	}
	switch m := RedisFailureMode(strings.ToLower(strings.TrimSpace(s))); m {
	case RedisFailOpen, RedisFailClosed:
		g.RedisFailureMode = m
	default:
		l.errorf(e.v, "%s must be open or closed", field)
	}
}
