package config

import (
	"strings"
	"testing"
)

// TestRedisKeys reads the Redis connection where a LiteLLM config holds it.
func TestRedisKeys(t *testing.T) {
	src := `litellm_settings:
  cache: true
  cache_params:
    type: redis
    host: cache.internal
    port: 6380
    password: os.environ/REDIS_PW
    username: gw
    ssl: true
    ttl: 600
router_settings:
  redis_host: other.internal
  redis_port: 7000
  redis_url: redis://router:1
general_settings:
  redis_failure_mode: closed
`
	cfg, problems, err := Parse([]byte(src), Options{LookupEnv: envOf(map[string]string{"REDIS_PW": "pw-1"})})
	if err != nil {
		t.Fatal(err)
	}
	checkProblems(t, problems, []want{w(1, "no mcp_servers")})
	r := cfg.Redis
	// cache_params wins where both name a field; router_settings fills the URL it left unset.
	if r.Host != "cache.internal" || r.Port != 6380 || r.Password.Reveal() != "pw-1" || r.Username != "gw" ||
		r.SSL == nil || !*r.SSL || r.URL.Reveal() != "redis://router:1" || r.Line != 5 {
		t.Fatalf("redis = %#v", r)
	}
	if cfg.General.RedisFailureMode != RedisFailClosed {
		t.Fatalf("failure mode %q", cfg.General.RedisFailureMode)
	}
	if s := strings.Join([]string{r.URL.String(), r.Password.String()}, " "); strings.Contains(s, "pw-1") || strings.Contains(s, "router") {
		t.Fatalf("secrets print: %s", s)
	}

	cfg, problems, _ = Parse([]byte("router_settings:\n  redis_host: h\n  redis_password: p\n  routing_strategy: simple-shuffle\n"), Options{})
	if cfg.Redis.Host != "h" || cfg.Redis.Password.Reveal() != "p" {
		t.Fatalf("router_settings: %#v", cfg.Redis)
	}
	checkProblems(t, problems, []want{w(1, "no mcp_servers"), w(4, `"routing_strategy" in router_settings is not used`)})

	cfg, problems, _ = Parse([]byte("litellm_settings:\n  cache_params:\n    type: s3\n    host: h\n"), Options{})
	if cfg.Redis.IsSet() {
		t.Fatalf("an s3 cache named a Redis: %#v", cfg.Redis)
	}
	checkProblems(t, problems, []want{w(1, "no mcp_servers"), w(3, `type "s3" is not redis`)})

	_, problems, _ = Parse([]byte("general_settings:\n  redis_failure_mode: maybe\nrouter_settings:\n  redis_port: 0\n"), Options{})
	checkProblems(t, problems, []want{w(1, "no mcp_servers"), e(2, "redis_failure_mode must be open or closed"), e(4, "redis_port must be a port number")})
}
