package app

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/ui"
)

// Env holds the environment variables the gateway reads besides the config file's references.
type Env struct {
	// SaltKey is LITELLM_SALT_KEY; empty means a per-process sealing key.
	SaltKey string
	// ClientTimeout is LITELLM_MCP_CLIENT_TIMEOUT (default 60 s).
	ClientTimeout time.Duration
	// ListingTimeout is LITELLM_MCP_TOOL_LISTING_TIMEOUT (default 30 s).
	ListingTimeout time.Duration
	// MaxPages is MCP_TOOL_LISTING_MAX_PAGES (default 100).
	MaxPages int
	// PermitWeak is LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true.
	PermitWeak bool
	// Separator is MCP_TOOL_PREFIX_SEPARATOR (default "-").
	Separator string
	// ProxyBaseURL is PROXY_BASE_URL, the gateway's public URL (LiteLLM's name); the
	// signed identity's default issuer.
	ProxyBaseURL string
	// DisableUI is DISABLE_ADMIN_UI=true: no admin UI at /ui.
	DisableUI bool
	// UISSO is the admin UI's sign-in through an OpenID provider (GENERIC_CLIENT_ID and
	// friends); nil: none.
	UISSO *ui.SSOConfig
}

// ReadEnv reads the gateway's environment variables through lookupEnv.
func ReadEnv(lookupEnv func(string) (string, bool)) (Env, error) {
	e := Env{ClientTimeout: 60 * time.Second, ListingTimeout: 30 * time.Second, MaxPages: 100}
	e.SaltKey, _ = lookupEnv(seal.SaltKeyEnv)
	base, _ := lookupEnv("PROXY_BASE_URL")
	e.ProxyBaseURL = strings.TrimRight(strings.TrimSpace(base), "/")
	secs := func(name string, dst *time.Duration) error {
		v, ok := lookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			return nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 {
			return fmt.Errorf("%s must be a positive number of seconds", name)
		}
		*dst = time.Duration(f * float64(time.Second))
		return nil
	}
	if err := secs("LITELLM_MCP_CLIENT_TIMEOUT", &e.ClientTimeout); err != nil {
		return e, err
	}
	if err := secs("LITELLM_MCP_TOOL_LISTING_TIMEOUT", &e.ListingTimeout); err != nil {
		return e, err
	}
	if v, ok := lookupEnv("MCP_TOOL_LISTING_MAX_PAGES"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return e, fmt.Errorf("MCP_TOOL_LISTING_MAX_PAGES must be a positive integer")
		}
		e.MaxPages = n
	}
	v, _ := lookupEnv("LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY")
	e.PermitWeak = strings.EqualFold(strings.TrimSpace(v), "true")
	v, _ = lookupEnv("DISABLE_ADMIN_UI")
	e.DisableUI = strings.EqualFold(strings.TrimSpace(v), "true")
	sso, err := readUISSO(lookupEnv)
	if err != nil {
		return e, err
	}
	e.UISSO = sso
	e.Separator = ConfigOptions(lookupEnv).ToolPrefixSeparator
	if e.Separator == "" {
		e.Separator = "-"
	}
	return e, nil
}

// ConfigOptions returns the config loader options taken from the environment.
func ConfigOptions(lookupEnv func(string) (string, bool)) config.Options {
	sep, _ := lookupEnv("MCP_TOOL_PREFIX_SEPARATOR")
	return config.Options{LookupEnv: lookupEnv, ToolPrefixSeparator: sep}
}

// gatewaySecrets are the environment variables holding the gateway's own
// secrets, never readable by a server config posted through the API.
var gatewaySecrets = map[string]bool{
	"LITELLM_MASTER_KEY": true, "LITELLM_SALT_KEY": true, "DATABASE_URL": true,
	"REDIS_PASSWORD": true, "REDIS_URL": true, "REDIS_USERNAME": true,
	"GENERIC_CLIENT_SECRET": true,
}

// deniedToAPI reports whether a server config posted through the API (a
// preview or a stored server) may not reference the environment variable
// name: the gateway's own secrets, and every LITELLM_* and MCPGW_* name
// (the gateway's own settings). Names are compared case-insensitively.
func deniedToAPI(name string) bool {
	up := strings.ToUpper(name)
	return gatewaySecrets[up] || strings.HasPrefix(up, "LITELLM_") || strings.HasPrefix(up, "MCPGW_")
}

// apiConfigOptions are ConfigOptions for server configs posted through the
// API: references to the gateway's own secrets are refused.
func apiConfigOptions(lookupEnv func(string) (string, bool)) config.Options {
	o := ConfigOptions(lookupEnv)
	o.DenyEnv = deniedToAPI
	return o
}

// environ renders a stdio server's own env as KEY=VALUE. The config's
// environment_variables are not passed on: they feed os.environ/ references
// (a server's env may name one), and often hold model API keys that no stdio
// child should see.
func environ(own map[string]string) []string {
	keys := make([]string, 0, len(own))
	for k := range own {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+own[k])
	}
	return out
}
