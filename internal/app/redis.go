package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// The environment variables naming the Redis, as LiteLLM reads them.
const (
	redisURLEnv      = "REDIS_URL"
	redisHostEnv     = "REDIS_HOST"
	redisPortEnv     = "REDIS_PORT"
	redisUserEnv     = "REDIS_USERNAME"
	redisPasswordEnv = "REDIS_PASSWORD"
	redisSSLEnv      = "REDIS_SSL"
)

// redisSettings merges the file's Redis (litellm_settings.cache_params, router_settings.redis_*)
// with the environment: when the file names a server (a URL or a host), the environment's
// REDIS_URL, REDIS_HOST and REDIS_PORT are not read, and its credentials fill only what the file
// left unset; otherwise the environment alone names it. ok is false when neither does.
func redisSettings(file config.Redis, lookupEnv func(string) (string, bool)) (s redisconn.Settings, ok bool, err error) {
	env := func(name string) string {
		if v, ok := lookupEnv(name); ok {
			return strings.TrimSpace(v)
		}
		return ""
	}
	s = redisconn.Settings{URL: file.URL.Reveal(), Host: file.Host, Port: file.Port,
		Username: file.Username, Password: file.Password.Reveal()}
	if !file.IsSet() {
		s.URL, s.Host = env(redisURLEnv), env(redisHostEnv)
		if p := env(redisPortEnv); p != "" && s.URL == "" {
			n, perr := strconv.Atoi(p)
			if perr != nil || n < 1 || n > 65535 {
				return s, false, fmt.Errorf("%s must be a port number (1-65535)", redisPortEnv)
			}
			s.Port = n
		}
	}
	if s.Username == "" {
		s.Username = env(redisUserEnv)
	}
	if v, ok := lookupEnv(redisPasswordEnv); ok && s.Password == "" {
		s.Password = v
	}
	switch {
	case file.SSL != nil:
		s.TLS = *file.SSL
	case env(redisSSLEnv) != "":
		v := strings.ToLower(env(redisSSLEnv))
		s.TLS = v == "true" || v == "1" || v == "yes"
	}
	return s, s.Configured(), nil
}

// openRedis builds the Redis client the config and environment name, or returns nil when none
// is named. It does not connect: a Redis down at start is an outage like any other (limits fall
// back as redis_failure_mode says and recover when it answers); only settings that cannot name
// a server stop the start. Errors never quote the URL or the password.
func openRedis(cfg *config.Config, o options) (*redisconn.Conn, error) {
	s, ok, err := redisSettings(cfg.Redis, o.lookupEnv)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if !ok {
		return nil, nil
	}
	c, err := redisconn.New(s, o.log)
	if err != nil {
		return nil, fmt.Errorf("redis (litellm_settings.cache_params, router_settings.redis_*, REDIS_URL or REDIS_HOST): %w", err)
	}
	o.log.Info("redis configured", "addr", c.Addr())
	return c, nil
}

// redisCheck is readiness's "redis" entry: "ok", or why Redis is not usable and since when.
// It is advisory: with Redis down the gateway still serves (limits per replica, or refused
// under redis_failure_mode: closed), so readiness does not fail and a load balancer does not
// take every replica out at once.
func redisCheck(c *redisconn.Conn, gate *sharedGate) front.Check {
	return front.Check{Name: "redis", Advisory: true, Probe: func(ctx context.Context) error {
		if err := c.Ping(ctx); err != nil {
			h := c.Health()
			return fmt.Errorf("%s (down since %s, %d outages; %s)", err.Error(), h.Since.UTC().Format(time.RFC3339), h.Outages, gate.status())
		}
		return nil
	}}
}

// WithRedisPrefix starts the Redis keys of the limits with prefix instead of
// limits.DefaultPrefix (tests sharing one Redis keep apart by it).
func WithRedisPrefix(prefix string) Option { return func(o *options) { o.redisPrefix = prefix } }

// closeRedis closes c's connections (nothing when c is nil).
func closeRedis(c *redisconn.Conn, log *slog.Logger) {
	if c == nil {
		return
	}
	if err := c.Close(); err != nil {
		log.Warn("closing the redis client", "error", err.Error())
	}
}
