package config

import (
	"strings"
	"testing"
)

// want is one expected problem: its line, severity and a fragment of its message.
type want struct {
	line int
	sev  Severity
	frag string
}

func e(line int, frag string) want { return want{line, SeverityError, frag} }
func w(line int, frag string) want { return want{line, SeverityWarning, frag} }

// checkProblems asserts that got is exactly wants, in order.
func checkProblems(t *testing.T, got []Problem, wants []want) {
	t.Helper()
	ok := len(got) == len(wants)
	for i := 0; ok && i < len(wants); i++ {
		g, x := got[i], wants[i]
		ok = g.Line == x.line && g.Severity == x.sev && strings.Contains(g.Msg, x.frag)
	}
	if !ok {
		var ws strings.Builder
		for _, x := range wants {
			ws.WriteString("  " + Problem{x.line, x.sev, "…" + x.frag + "…"}.String() + "\n")
		}
		t.Errorf("problems:\n%swant:\n%s", fmtProblems(got), ws.String())
	}
}

// TestRules covers every validation rule; each case lists every problem it must produce.
func TestRules(t *testing.T) {
	const ok = "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n"
	cases := []struct {
		name string
		src  string
		env  map[string]string
		sep  string
		want []want
	}{
		{name: "valid", src: ok},
		{name: "empty file", src: "", want: []want{w(1, "empty")}},
		{name: "comment only", src: "# nothing\n", want: []want{w(1, "empty")}},
		{name: "null document", src: "~\n", want: []want{w(1, "empty")}},
		{name: "not a mapping", src: "- a\n- b\n", want: []want{e(1, "must be a mapping")}},
		{name: "syntax error", src: "mcp_servers:\n  s:\n    url: [\n", want: []want{e(3, "invalid YAML")}},
		{name: "tab indentation", src: "mcp_servers:\n\ts: {}\n", want: []want{e(2, "invalid YAML")}},
		{name: "second document", src: ok + "---\nfoo: 1\n", want: []want{w(4, "first YAML document")}},
		{name: "no servers", src: "general_settings: {}\n", want: []want{w(1, "no mcp_servers")}},
		{name: "no servers but db", src: "general_settings:\n  store_model_in_db: true\n"},
		{name: "unknown top-level key", src: ok + "router_settingz:\n  x: 1\n", want: []want{w(4, `"router_settingz" is not used`)}},
		{name: "unknown router_settings key", src: ok + "router_settings:\n  x: 1\n", want: []want{w(5, `key "x" in router_settings is not used`)}},
		{name: "duplicate top-level key", src: ok + "mcp_servers: {}\n", want: []want{e(4, `duplicate top-level key "mcp_servers"`)}},
		{name: "mcp_servers not a mapping", src: "mcp_servers: [a]\n", want: []want{e(1, "mcp_servers must be a mapping"), w(1, "no mcp_servers")}},

		// servers: transport and url / command
		{name: "http without url", src: "mcp_servers:\n  s:\n    transport: http\n", want: []want{e(2, `server "s" uses the http transport but has no url`)}},
		{name: "default transport without url", src: "mcp_servers:\n  s: {}\n", want: []want{e(2, "has no url")}},
		{name: "null server", src: "mcp_servers:\n  s:\n", want: []want{e(2, "has no url")}},
		{name: "sse without url", src: "mcp_servers:\n  s:\n    transport: sse\n", want: []want{e(2, "sse transport but has no url")}},
		{name: "url not http", src: "mcp_servers:\n  s:\n    url: ftp://x/mcp\n", want: []want{e(3, "url must be an absolute http")}},
		{name: "url relative", src: "mcp_servers:\n  s:\n    url: /mcp\n", want: []want{e(3, "url must be an absolute http")}},
		{name: "url is a list", src: "mcp_servers:\n  s:\n    url: [a]\n", want: []want{e(2, "has no url"), e(3, "must be a single value")}},
		{name: "stdio without command", src: "mcp_servers:\n  s:\n    transport: stdio\n", want: []want{e(2, "stdio transport but has no command")}},
		{name: "stdio blank command", src: "mcp_servers:\n  s:\n    transport: stdio\n    command: \" \"\n", want: []want{e(4, "has no command")}},
		{name: "stdio with url", src: "mcp_servers:\n  s:\n    transport: stdio\n    command: x\n    url: http://a/\n", want: []want{w(5, "url is not used")}},
		{name: "stdio with auth", src: "mcp_servers:\n  s:\n    transport: stdio\n    command: x\n    auth_type: bearer_token\n", want: []want{w(5, "auth_type is not used")}},
		{name: "http with command", src: "mcp_servers:\n  s:\n    url: http://a/\n    command: x\n", want: []want{w(4, "command, args and env")}},
		{name: "unknown transport", src: "mcp_servers:\n  s:\n    url: http://a/\n    transport: websocket\n", want: []want{e(4, `unknown transport "websocket"`)}},
		{name: "transport case-insensitive", src: "mcp_servers:\n  s:\n    url: http://a/\n    transport: HTTP\n"},
		{name: "args not a list", src: "mcp_servers:\n  s:\n    transport: stdio\n    command: x\n    args: run\n", want: []want{e(5, "args must be a list")}},
		{name: "env not a mapping", src: "mcp_servers:\n  s:\n    transport: stdio\n    command: x\n    env: [a]\n", want: []want{e(5, "env must be a mapping")}},

		// protocol_version
		{name: "unknown protocol_version", src: ok + "    protocol_version: 2025-01-01\n", want: []want{e(4, `unknown protocol version "2025-01-01"`)}},
		{name: "unknown mcp_info.protocol_version", src: ok + "    mcp_info:\n      protocol_version: v9\n", want: []want{e(5, `unknown protocol version "v9"`)}},
		{name: "protocol_version overrides mcp_info", src: ok + "    protocol_version: auto\n    mcp_info:\n      protocol_version: 2025-03-26\n",
			want: []want{w(6, "overrides mcp_info")}},
		{name: "mcp_info free-form", src: ok + "    mcp_info:\n      server_name: x\n      anything: [1]\n"},

		// auth
		{name: "unknown auth_type", src: ok + "    auth_type: magic\n", want: []want{e(4, `unsupported auth type "magic"`)}},
		{name: "litellm-only auth_type", src: ok + "    auth_type: aws_sigv4\n", want: []want{e(4, `"aws_sigv4"`)}},
		{name: "oauth2 without flow", src: ok + "    auth_type: oauth2\n", want: []want{e(4, "needs oauth2_flow")}},
		{name: "oauth2 unknown flow", src: ok + "    auth_type: oauth2\n    oauth2_flow: implicit\n", want: []want{e(5, `unknown flow "implicit"`)}},
		{name: "client_credentials incomplete", src: ok + "    auth_type: oauth2\n    oauth2_flow: client_credentials\n    client_id: c\n",
			want: []want{e(5, "needs client_secret, token_url")}},
		{name: "authorization_code", src: ok + "    auth_type: oauth2\n    oauth2_flow: authorization_code\n"},
		{name: "bad token_url", src: ok + "    token_url: nope\n", want: []want{e(4, "token_url must be")}},
		{name: "bad authorization_url", src: ok + "    authorization_url: nope\n", want: []want{e(4, "authorization_url must be")}},
		{name: "both auth_value spellings", src: ok + "    auth_value: a\n    authentication_token: b\n", want: []want{w(5, "alias of auth_value")}},
		{name: "both auth_value spellings reversed", src: ok + "    authentication_token: b\n    auth_value: a\n", want: []want{w(4, "alias of auth_value")}},
		{name: "scopes list", src: ok + "    scopes: [a, b c]\n"},

		// headers
		{name: "bad auth_header_name", src: ok + "    auth_header_name: \"X Key\"\n", want: []want{e(4, "not a valid HTTP header name")}},
		{name: "bad static header name", src: ok + "    static_headers:\n      ok: 1\n      \"a:b\": x\n", want: []want{e(6, `"a:b" is not a valid`)}},
		{name: "static header value with newline", src: ok + "    static_headers:\n      X-A: \"a\\r\\nX-B: b\"\n", want: []want{e(5, "line break")}},
		{name: "static header twice", src: ok + "    static_headers:\n      X-A: a\n      x-a: b\n", want: []want{e(6, "twice")}},
		{name: "bad extra header", src: ok + "    extra_headers:\n      - x-ok\n      - \"bad header\"\n", want: []want{e(6, `"bad header"`)}},

		// names
		{name: "name contains separator", src: "mcp_servers:\n  my-server:\n    url: http://a/\n",
			want: []want{e(2, `server name "my-server" contains the tool prefix separator "-": tool names are served as <server>-<tool>`)}},
		{name: "separator suggestion", src: "mcp_servers:\n  my-server:\n    url: http://a/\n", want: []want{e(2, `"my_server"`)}},
		{name: "custom separator", sep: "__", src: "mcp_servers:\n  my-server:\n    url: http://a/\n  a__b:\n    url: http://a/\n",
			want: []want{e(4, `contains the tool prefix separator "__"`)}},
		{name: "underscore separator suggestion", sep: "_", src: "mcp_servers:\n  a_b:\n    url: http://a/\n", want: []want{e(2, `"ab"`)}},
		{name: "name with slash", src: "mcp_servers:\n  a/b:\n    url: http://a/\n", want: []want{e(2, "URL paths")}},
		{name: "name with space", src: "mcp_servers:\n  \"a b\":\n    url: http://a/\n", want: []want{e(2, "white space")}},
		{name: "empty name", src: "mcp_servers:\n  \"\":\n    url: http://a/\n", want: []want{e(2, "must not be empty")}},
		{name: "server_id with slash", src: ok + "    server_id: a/b\n", want: []want{e(4, "server_id")}},
		{name: "duplicate server name", src: ok + "  s:\n    url: http://a/\n", want: []want{e(4, `duplicate server name "s" in mcp_servers (first at line 2)`)}},
		{name: "duplicate server_id", src: ok + "  t:\n    url: http://a/\n    server_id: s\n",
			want: []want{e(4, `server "t" has server_id "s", already used by server "s" (line 2)`)}},
		{name: "duplicate explicit server_ids", src: "mcp_servers:\n  a:\n    url: http://a/\n    server_id: x\n  b:\n    url: http://a/\n    server_id: x\n",
			want: []want{e(5, "already used")}},
		{name: "ambiguous alias", src: ok + "  t:\n    url: http://a/\n    alias: s\n", want: []want{w(4, "ambiguous")}},
		{name: "server_id shadows a later name", src: "mcp_servers:\n  a:\n    url: http://a/\n    server_id: b\n  b:\n    url: http://a/\n",
			want: []want{w(2, `server "a" has server_id "b", which is the name of server "b"`), e(5, "already used")}},
		{name: "server_id shadows an earlier name", src: ok + "  t:\n    url: http://a/\n    server_id: s\n  s2:\n    url: http://a/\n    server_id: t\n",
			want: []want{e(4, "already used"), w(7, `which is the name of server "t"`)}},
		{name: "alias shadows a later name", src: "mcp_servers:\n  a:\n    url: http://a/\n    alias: b\n  b:\n    url: http://a/\n",
			want: []want{w(2, `alias "b", which is also the name, id or alias of server "b"`)}},
		{name: "alias shadows another id", src: "mcp_servers:\n  a:\n    url: http://a/\n    server_id: x\n  b:\n    url: http://a/\n    alias: x\n",
			want: []want{w(5, `selects server "a"`)}},
		{name: "same alias twice", src: "mcp_servers:\n  a:\n    url: http://a/\n    alias: x\n  b:\n    url: http://a/\n    alias: x\n",
			want: []want{w(5, `selects server "a"`)}},
		{name: "duplicate key in server", src: ok + "    url: http://b/\n", want: []want{e(4, `duplicate key "url"`)}},

		// numbers
		{name: "negative timeout", src: ok + "    timeout: -1\n", want: []want{e(4, "timeout must not be negative")}},
		{name: "timeout not a number", src: ok + "    timeout: soon\n", want: []want{e(4, "number of seconds")}},
		{name: "timeout infinite", src: ok + "    timeout: .inf\n", want: []want{e(4, "number of seconds")}},
		{name: "timeout too large", src: ok + "    timeout: 1e300\n", want: []want{e(4, "too large")}},
		{name: "negative rpm", src: ok + "    rpm: -5\n", want: []want{e(4, "rpm must not be negative")}},
		{name: "negative max_concurrent_requests", src: ok + "    max_concurrent_requests: -1\n", want: []want{e(4, "max_concurrent_requests must not be negative")}},
		{name: "fractional rpm", src: ok + "    rpm: 1.5\n", want: []want{e(4, "whole number")}},
		{name: "bool not bool", src: ok + "    allow_sampling: maybe\n", want: []want{e(4, "true or false")}},

		// unknown keys
		{name: "unknown server key", src: ok + "    colour: red\n", want: []want{w(4, `key "colour" in mcp_servers.s is not used`)}},
		{name: "litellm-only server key", src: ok + "    allowed_params: x\n", want: []want{w(4, "LiteLLM option mcpgw does not implement")}},
		{name: "spec_path", src: ok + "    spec_path: x.json\n"},
		{name: "spec_path needs http", src: ok + "    transport: sse\n    spec_path: x.json\n", want: []want{e(5, "spec_path needs transport http")}},
		{name: "spec_path bad url", src: ok + "    spec_path: 'http:/x'\n", want: []want{e(4, "spec_path must be")}},
		{name: "mcp_policies", src: ok + "general_settings:\n  mcp_policies:\n    - {name: a, expr: 'tool.name == \"x\"'}\n    - {name: b, expr: 'args.y', effect: require}\n"},
		{name: "mcp_policies errors name their line", src: ok + "general_settings:\n  mcp_policies:\n    - {name: a, expr: 'tool.name =='}\n    - {name: b, expr: 'true', effect: allow}\n    - {name: c, expr: 'true'}\n    - {name: c, expr: 'false'}\n",
			want: []want{e(6, "does not compile"), e(7, "effect must be"), e(9, "used twice")}},
		{name: "unknown general key", src: ok + "general_settings:\n  alerting: [slack]\n", want: []want{w(5, `"alerting" in general_settings`)}},
		{name: "unknown litellm key", src: ok + "litellm_settings:\n  drop_params: true\n", want: []want{w(5, `"drop_params" in litellm_settings`)}},
		{name: "unknown model keys", src: ok + "model_list:\n  - model_name: m\n    model_info: {}\n    litellm_params:\n      model: openai/x\n      rpm: 3\n",
			want: []want{w(6, `"model_info"`), w(9, `"rpm"`)}},

		// environment references
		{name: "unset env var", src: "mcp_servers:\n  s:\n    url: os.environ/MCP_URL\n",
			want: []want{e(2, "has no url"), e(3, `environment variable "MCP_URL" is not set`)}},
		{name: "empty env reference", src: ok + "    auth_value: os.environ/\n", want: []want{e(4, "names no environment variable")}},
		{name: "env in ignored key is not resolved", src: ok + "    colour: os.environ/NOPE\n", want: []want{w(4, "colour")}},
		{name: "env from file", src: "environment_variables:\n  U: http://a/\n" + strings.Replace(ok, "http://127.0.0.1:1/mcp", "os.environ/U", 1)},
		{name: "env from process", env: map[string]string{"U": "http://a/"}, src: strings.Replace(ok, "http://127.0.0.1:1/mcp", "os.environ/U", 1)},
		{name: "env bool", env: map[string]string{"B": "true"}, src: ok + "    allow_sampling: os.environ/B\n"},
		{name: "environment_variables unset ref", src: ok + "environment_variables:\n  A: os.environ/NOPE\n", want: []want{e(5, `"NOPE" is not set`)}},

		// general_settings
		{name: "custom_auth python path", src: ok + "general_settings:\n  custom_auth: my_module.auth\n", want: []want{e(5, "Python module paths are not supported")}},
		{name: "master_key without sk-", src: ok + "general_settings:\n  master_key: hello\n", want: []want{w(5, `should start with "sk-"`)}},
		{name: "advertised unknown", src: ok + "general_settings:\n  mcp_advertised_versions:\n    - 2025-11-25\n    - 1999-01-01\n",
			want: []want{e(7, `unknown protocol revision "1999-01-01"`)}},
		{name: "advertised empty", src: ok + "general_settings:\n  mcp_advertised_versions: []\n", want: []want{e(5, "at least one")}},
		{name: "advertised not a list", src: ok + "general_settings:\n  mcp_advertised_versions: 2025-11-25\n", want: []want{e(5, "must be a list")}},
		{name: "advertised duplicate", src: ok + "general_settings:\n  mcp_advertised_versions: [2025-11-25, 2025-11-25]\n", want: []want{w(5, "twice")}},
		{name: "http limits", src: ok + "general_settings:\n  http_read_header_timeout: 5\n  http_read_timeout: 2.5\n  http_write_timeout: 120\n  http_idle_timeout: 30\n  http_max_header_bytes: 8192\n  max_request_body_bytes: 1048576\n  max_connections: 10\n  max_inflight_requests: 5\n"},
		{name: "http timeout zero", src: ok + "general_settings:\n  http_read_timeout: 0\n", want: []want{e(5, "http_read_timeout must be a positive number of seconds")}},
		{name: "http timeout negative", src: ok + "general_settings:\n  http_idle_timeout: -1\n", want: []want{e(5, "must not be negative")}},
		{name: "http timeout not a number", src: ok + "general_settings:\n  http_write_timeout: soon\n", want: []want{e(5, "must be a number of seconds")}},
		{name: "max_connections zero", src: ok + "general_settings:\n  max_connections: 0\n", want: []want{e(5, "max_connections must be a positive whole number")}},
		{name: "max_inflight_requests not a number", src: ok + "general_settings:\n  max_inflight_requests: many\n", want: []want{e(5, "must be a whole number")}},
		{name: "max_request_body_bytes negative", src: ok + "general_settings:\n  max_request_body_bytes: -5\n", want: []want{e(5, "must not be negative")}},
		{name: "server timeout beyond write timeout", src: ok + "    timeout: 90\ngeneral_settings:\n  http_write_timeout: 60\n", want: []want{w(2, "not shorter than general_settings.http_write_timeout")}},
		{name: "allowed hosts", src: ok + "general_settings:\n  allowed_hosts: [gw.example.com, \"*.corp.example\", \"[::1]\"]\n  allowed_origins: [\"https://app.example.com\"]\n"},
		{name: "allowed host with scheme", src: ok + "general_settings:\n  allowed_hosts:\n    - ok.example\n    - https://gw.example.com\n", want: []want{e(7, "allowed_hosts[1] must be a host name")}},
		{name: "allowed host star", src: ok + "general_settings:\n  allowed_hosts: [\"*\"]\n", want: []want{e(5, "allowed_hosts[0] must be a host name")}},
		{name: "allowed origin with path", src: ok + "general_settings:\n  allowed_origins:\n    - https://app.example.com/x\n", want: []want{e(6, "allowed_origins[0] must be an origin")}},
		{name: "allowed origin star", src: ok + "general_settings:\n  allowed_origins: [\"*\"]\n", want: []want{e(5, "must be an origin")}},
		{name: "general not a mapping", src: ok + "general_settings: 3\n", want: []want{e(4, "general_settings must be a mapping")}},

		// litellm_settings and model_list
		{name: "sampling model missing", src: ok + "litellm_settings:\n  default_mcp_sampling_model: gpt\n", want: []want{e(5, `"gpt" names no model_name`)}},
		{name: "sampling model present", src: ok + "model_list:\n  - model_name: gpt\n    litellm_params: {model: openai/gpt-4o}\nlitellm_settings:\n  default_mcp_sampling_model: gpt\n"},
		{name: "sampling model not openai", src: ok + "model_list:\n  - model_name: gpt\n    litellm_params: {model: anthropic/c}\nlitellm_settings:\n  default_mcp_sampling_model: gpt\n",
			want: []want{w(5, "OpenAI-compatible")}},
		{name: "mcp alias", src: ok + "litellm_settings:\n  mcp_aliases:\n    fx: s\n"},
		{name: "mcp alias to nothing", src: ok + "litellm_settings:\n  mcp_aliases:\n    fx: nope\n", want: []want{e(6, `mcp_aliases.fx names "nope"`)}},
		{name: "mcp alias shadowed by a server", src: ok + "litellm_settings:\n  mcp_aliases:\n    s: s\n", want: []want{w(6, "that server wins")}},
		{name: "mcp aliases not a mapping", src: ok + "litellm_settings:\n  mcp_aliases: [a]\n", want: []want{e(5, "must be a mapping")}},
		{name: "model without name", src: ok + "model_list:\n  - litellm_params: {model: openai/x}\n", want: []want{e(5, "has no model_name")}},
		{name: "model_list not a list", src: ok + "model_list: {a: 1}\n", want: []want{e(4, "model_list must be a list")}},
		{name: "model bad api_base", src: ok + "model_list:\n  - model_name: m\n    litellm_params:\n      api_base: localhost\n", want: []want{e(7, "api_base must be")}},
		{name: "model entry not a mapping", src: ok + "model_list:\n  - just-a-string\n", want: []want{e(5, "must be a mapping")}},

		// YAML structure
		{name: "merge key not a mapping", src: "mcp_servers:\n  s:\n    <<: 3\n    url: http://a/\n", want: []want{e(3, "merge key")}},
		{name: "complex key", src: "mcp_servers:\n  ? [a]\n  : {}\n", want: []want{w(1, "no mcp_servers"), e(2, "keys must be plain values")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems, err := Parse([]byte(tc.src), Options{LookupEnv: envOf(tc.env), ToolPrefixSeparator: tc.sep})
			checkProblems(t, problems, tc.want)
			if gotErr, wantErr := err != nil, HasErrors(problems); gotErr != wantErr {
				t.Errorf("err = %v, but HasErrors = %v", err, wantErr)
			}
		})
	}
}
