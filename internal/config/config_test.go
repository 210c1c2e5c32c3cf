package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// envOf returns a LookupEnv over a fixed map.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func mustParse(t *testing.T, src string, opts Options) (*Config, []Problem) {
	t.Helper()
	cfg, problems, err := Parse([]byte(src), opts)
	if err != nil {
		t.Fatalf("Parse: %v; problems:\n%s", err, fmtProblems(problems))
	}
	return cfg, problems
}

func fmtProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

func TestParseFullConfig(t *testing.T) {
	src := `# a LiteLLM-shaped config
environment_variables:
  FILE_TOKEN: from-file
model_list:
  - model_name: sampler
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: http://127.0.0.1:9999/v1
      api_key: os.environ/OPENAI_KEY
mcp_servers:
  zeta:
    url: https://zeta.example/mcp
    transport: sse
    protocol_version: "2025-06-18"
    mcp_info:
      protocol_version: "2024-11-05"
    auth_type: bearer_token
    auth_value: os.environ/FILE_TOKEN
    static_headers:
      "  X-Team  ": "  blue  "
    extra_headers: [x-trace-id]
    allowed_tools: [a, b]
    allow_elicitation: true
    allow_sampling: true
    rpm: 120
    max_concurrent_requests: 4
    timeout: 2.5
    access_groups: [ops]
    allow_all_keys: true
    description: the zeta server
    alias: Zeta Server
  alpha:
    server_id: alpha-id
    transport: stdio
    command: go
    args: [run, ./examples/hello-server]
    env:
      A: "1"
    mcp_info:
      protocol_version: 2026-07-28
  oauth:
    url: http://127.0.0.1:1/mcp
    auth_type: oauth2
    oauth2_flow: client_credentials
    client_id: cid
    client_secret: os.environ/CLIENT_SECRET
    token_url: http://127.0.0.1:1/token
    authorization_url: https://auth.example/authorize
    scopes: "read  write"
    auth_header_name: X-Api-Key
    authentication_token: tok
general_settings:
  master_key: sk-1234
  custom_auth: https://auth.example/check
  mcp_advertised_versions: ["2026-07-28"]
  database_url: postgres://u:p@127.0.0.1/db
  store_model_in_db: true
  mcp_scoped_prefix: false
litellm_settings:
  default_mcp_sampling_model: sampler
`
	cfg, problems := mustParse(t, src, Options{LookupEnv: envOf(map[string]string{
		"OPENAI_KEY": "ok-1", "CLIENT_SECRET": "cs-1", "FILE_TOKEN": "from-os",
	})})
	checkProblems(t, problems, []want{w(16, "protocol_version overrides mcp_info.protocol_version")})
	if got := []string{cfg.Servers[0].Name, cfg.Servers[1].Name, cfg.Servers[2].Name}; !reflect.DeepEqual(got, []string{"zeta", "alpha", "oauth"}) {
		t.Errorf("server order = %v, want file order", got)
	}
	z := cfg.Servers[0]
	wantZ := Server{
		Name: "zeta", ServerID: "zeta", Alias: "Zeta_Server", Description: "the zeta server",
		URL: "https://zeta.example/mcp", Transport: TransportSSE, ProtocolVersion: "2025-06-18",
		AuthType: AuthBearerToken, AuthValue: "from-file",
		StaticHeaders: map[string]string{"X-Team": "blue"}, ExtraHeaders: []string{"x-trace-id"},
		AllowedTools: []string{"a", "b"}, AllowElicitation: true, AllowSampling: true,
		RPM: 120, MaxConcurrentRequests: 4, Timeout: 2500 * time.Millisecond, AccessGroups: []string{"ops"}, AllowAllKeys: true,
		Line: 11,
	}
	if !reflect.DeepEqual(z, wantZ) {
		t.Errorf("zeta =\n%+v\nwant\n%+v", z, wantZ)
	}
	a := cfg.Servers[1]
	if a.ServerID != "alpha-id" || a.Transport != TransportStdio || a.Command != "go" ||
		!reflect.DeepEqual(a.Args, []string{"run", "./examples/hello-server"}) || a.Env["A"] != "1" ||
		a.ProtocolVersion != "2026-07-28" || a.Line != 32 {
		t.Errorf("alpha = %+v", a)
	}
	o := cfg.Servers[2]
	if o.AuthType != AuthOAuth2 || o.OAuth2Flow != OAuth2ClientCredentials || o.ClientID != "cid" ||
		o.ClientSecret.Reveal() != "cs-1" || o.TokenURL != "http://127.0.0.1:1/token" ||
		!reflect.DeepEqual(o.Scopes, []string{"read", "write"}) || o.AuthHeaderName != "X-Api-Key" ||
		o.AuthValue.Reveal() != "tok" || o.ProtocolVersion != ProtocolAuto || o.Transport != TransportHTTP {
		t.Errorf("oauth = %+v", o)
	}
	g := cfg.General
	if g.MasterKey.Reveal() != "sk-1234" || g.CustomAuth != "https://auth.example/check" ||
		!reflect.DeepEqual(g.MCPAdvertisedVersions, []string{"2026-07-28"}) ||
		g.DatabaseURL.Reveal() != "postgres://u:p@127.0.0.1/db" || !g.StoreModelInDB || g.MCPScopedPrefix {
		t.Errorf("general = %+v", g)
	}
	if cfg.LiteLLM.DefaultMCPSamplingModel != "sampler" {
		t.Errorf("litellm = %+v", cfg.LiteLLM)
	}
	wantModels := []Model{{ModelName: "sampler", Line: 5, Params: ModelParams{
		Model: "openai/gpt-4o-mini", APIBase: "http://127.0.0.1:9999/v1", APIKey: "ok-1"}}}
	if !reflect.DeepEqual(cfg.Models, wantModels) {
		t.Errorf("models = %+v", cfg.Models)
	}
	if s, ok := cfg.Server("alpha-id"); !ok || s.Name != "alpha" {
		t.Errorf("Server(alpha-id) = %v, %v", s, ok)
	}
	if s, ok := cfg.Server("Zeta_Server"); !ok || s.Name != "zeta" {
		t.Errorf("Server(Zeta_Server) = %v, %v", s, ok)
	}
	if _, ok := cfg.Server("nope"); ok {
		t.Error("Server(nope) found something")
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, problems := mustParse(t, "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n", Options{})
	if len(problems) != 0 {
		t.Errorf("problems:\n%s", fmtProblems(problems))
	}
	s := cfg.Servers[0]
	if s.ServerID != "s" || s.Transport != TransportHTTP || s.ProtocolVersion != ProtocolAuto || s.Alias != "" || s.Timeout != 0 {
		t.Errorf("server defaults = %+v", s)
	}
	if !reflect.DeepEqual(cfg.General.MCPAdvertisedVersions, []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}) || !cfg.General.MCPScopedPrefix ||
		cfg.General.HTTP != DefaultHTTPLimits() || cfg.General.AllowedHosts != nil {
		t.Errorf("general defaults = %+v", cfg.General)
	}
}

func TestEnvironmentLookupOrder(t *testing.T) {
	src := `environment_variables:
  SHARED: file
  OUTER: os.environ/REAL
mcp_servers:
  s:
    url: os.environ/URL
    auth_value: os.environ/SHARED
    description: os.environ/OUTER
`
	cfg, _ := mustParse(t, src, Options{LookupEnv: envOf(map[string]string{
		"SHARED": "process", "URL": "http://127.0.0.1:2/mcp", "REAL": "real",
	})})
	s := cfg.Servers[0]
	if s.AuthValue.Reveal() != "file" || s.URL != "http://127.0.0.1:2/mcp" || s.Description != "real" {
		t.Errorf("got %+v", s)
	}
	if cfg.EnvironmentVariables["OUTER"] != "real" {
		t.Errorf("environment_variables = %v", cfg.EnvironmentVariables)
	}
}

func TestMergeKeysAndAnchors(t *testing.T) {
	src := `defaults: &base
  transport: http
  timeout: 5
  allowed_tools: [x]
mcp_servers:
  one:
    <<: *base
    url: http://127.0.0.1:1/mcp
  two:
    <<: [*base]
    url: http://127.0.0.1:2/mcp
    timeout: 7
`
	cfg, problems, err := Parse([]byte(src), Options{})
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, fmtProblems(problems))
	}
	checkProblems(t, problems, []want{{1, SeverityWarning, `top-level key "defaults"`}})
	if cfg.Servers[0].Timeout != 5*time.Second || cfg.Servers[1].Timeout != 7*time.Second ||
		!reflect.DeepEqual(cfg.Servers[1].AllowedTools, []string{"x"}) {
		t.Errorf("servers = %+v", cfg.Servers)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, problems, err := Load(path, Options{})
	if err != nil || len(problems) != 0 || len(cfg.Servers) != 1 {
		t.Fatalf("Load = %v, %v, %v", cfg, problems, err)
	}
	if _, _, err := Load(filepath.Join(dir, "missing.yaml"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, _, err := Load(dir, Options{}); err == nil {
		t.Error("directory: no error")
	}
}

func TestValidationErrorResult(t *testing.T) {
	cfg, problems, err := Parse([]byte("mcp_servers:\n  s: {}\n  t: {}\n"), Options{})
	var ve *ValidationError
	if cfg != nil || !errors.As(err, &ve) || ve.Errors != 2 || !HasErrors(problems) {
		t.Fatalf("got cfg=%v err=%v problems=%v", cfg, err, problems)
	}
	if err.Error() != "config: 2 errors" {
		t.Errorf("Error() = %q", err.Error())
	}
}

// TestSecretsNeverInMessages feeds secrets to every secret field in ways that produce problems
// and checks no problem mentions them.
func TestSecretsNeverInMessages(t *testing.T) {
	const secret = "SEKRIT-VALUE"
	src := `model_list:
  - model_name: m
    litellm_params:
      model: anthropic/x
      api_key: SEKRIT-VALUE
      api_base: SEKRIT-VALUE
mcp_servers:
  s:
    url: SEKRIT-VALUE
    auth_type: oauth2
    oauth2_flow: client_credentials
    client_secret: SEKRIT-VALUE
    auth_value: SEKRIT-VALUE
    authentication_token: SEKRIT-VALUE
    token_url: SEKRIT-VALUE
    static_headers:
      Authorization: "Bearer SEKRIT-VALUE\n"
  t:
    url: os.environ/SEKRIT_HOLDER
    auth_value: [SEKRIT-VALUE]
general_settings:
  master_key: SEKRIT-VALUE
  custom_auth: SEKRIT-VALUE
  database_url: SEKRIT-VALUE
litellm_settings:
  default_mcp_sampling_model: m
`
	_, problems, err := Parse([]byte(src), Options{LookupEnv: envOf(map[string]string{"SEKRIT_HOLDER": secret})})
	if err == nil || len(problems) < 8 {
		t.Fatalf("expected many problems, got %v:\n%s", err, fmtProblems(problems))
	}
	for _, p := range problems {
		if strings.Contains(p.Msg, secret) {
			t.Errorf("problem leaks a secret: %s", p)
		}
	}
}

func TestSecretFormatting(t *testing.T) {
	s := Server{Name: "x", AuthValue: "hunter2", ClientSecret: "hunter3"}
	outs := []string{
		fmt.Sprintf("%v %+v %#v %s %x %q", s, s, s, s.AuthValue, s.AuthValue, s.AuthValue),
		fmt.Sprint(s.AuthValue), s.AuthValue.String(),
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(b))
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("x", "secret", s.AuthValue, "server", s)
	outs = append(outs, logBuf.String())
	for _, o := range outs {
		if strings.Contains(o, "hunter") {
			t.Errorf("secret leaked: %s", o)
		}
	}
	if s.AuthValue.Reveal() != "hunter2" || !s.AuthValue.IsSet() || Secret("").IsSet() || Secret("").String() != "" {
		t.Error("Reveal/IsSet/String wrong")
	}
}

// TestMergeBombIsBounded: nested merge keys over repeated aliases must not expand exponentially.
func TestMergeBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &x0 {url: 'http://127.0.0.1:1/mcp'}\n")
	for i := 1; i < 8; i++ {
		fmt.Fprintf(&b, "x%d: &x%d {<<: [", i, i)
		for j := 0; j < 30; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*x%d", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("mcp_servers:\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, "  s%d: {<<: *x7}\n", i)
	}
	start := time.Now()
	cfg, _, err := Parse([]byte(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if len(cfg.Servers) != 50 || cfg.Servers[49].URL != "http://127.0.0.1:1/mcp" {
		t.Errorf("servers = %d", len(cfg.Servers))
	}
}
