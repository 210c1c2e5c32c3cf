package config

import (
	"strings"
	"testing"
)

// A typo of a known key is named with the key it most likely meant, at
// every level; an unrelated unknown key gets no guess.
func TestUnknownKeyDidYouMean(t *testing.T) {
	const server = "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n"
	tests := []struct {
		name, src string
		line      int
		want      string // "" = no suggestion
	}{
		{"top level", "mcp_server:\n  s:\n    url: http://127.0.0.1:1/mcp\n", 1, `did you mean "mcp_servers"?`},
		{"top level case", server + "General_Settings:\n  master_key: sk-x\n", 4, `did you mean "general_settings"?`},
		{"general_settings", server + "general_settings:\n  mastr_key: sk-abc\n", 5, `did you mean "master_key"?`},
		{"general_settings dash", server + "general_settings:\n  custom-auth: http://a/\n", 5, `did you mean "custom_auth"?`},
		{"general_settings swap", server + "general_settings:\n  mcp_advertsied_versions: []\n", 5, `did you mean "mcp_advertised_versions"?`},
		{"litellm_settings", server + "litellm_settings:\n  default_mcp_sampling_modle: m\n", 5, `did you mean "default_mcp_sampling_model"?`},
		{"server entry", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n    trasport: http\n", 4, `did you mean "transport"?`},
		{"server entry 2 edits", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n    allowed_tool: [a]\n    alow_elicitation: true\n", 4, `did you mean "allowed_tools"?`},
		{"model entry", server + "model_list:\n  - model_nme: m\n    litellm_params: {model: openai/m}\n", 5, `did you mean "model_name"?`},
		{"litellm_params", server + "model_list:\n  - model_name: m\n    litellm_params: {model: openai/m, api_bse: http://a/}\n", 6, `did you mean "api_base"?`},
		{"unrelated key", server + "general_settings:\n  alerting: [slack]\n", 5, ""},
		{"short key not matched far", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n    cwd: /tmp\n", 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems, _ := Parse([]byte(tt.src), Options{})
			var got *Problem
			for i, p := range problems {
				if p.Line == tt.line && strings.Contains(p.Msg, "not used by mcpgw") {
					got = &problems[i]
				}
			}
			if got == nil {
				t.Fatalf("no unknown-key warning on line %d:\n%s", tt.line, fmtProblems(problems))
			}
			if tt.want == "" && strings.Contains(got.Msg, "did you mean") || tt.want != "" && !strings.HasSuffix(got.Msg, "; "+tt.want) {
				t.Errorf("warning %q, want suggestion %q", got.Msg, tt.want)
			}
		})
	}
}

// Every key the hint lists know is one the loader reads: none of them draws
// an unknown-key warning at its level.
func TestSuggestedKeysAreKnown(t *testing.T) {
	levels := []struct {
		keys []string
		wrap func(k string) string
	}{
		{topLevelKeys, func(k string) string { return k + ": {}\n" }},
		{generalKeys, func(k string) string { return "general_settings:\n  " + k + ": x\n" }},
		{litellmKeys, func(k string) string { return "litellm_settings:\n  " + k + ": x\n" }},
		{modelKeys, func(k string) string { return "model_list:\n  - " + k + ": x\n" }},
		{modelParamKeys, func(k string) string {
			return "model_list:\n  - model_name: m\n    litellm_params:\n      " + k + ": x\n"
		}},
		{serverKeys, func(k string) string { return "mcp_servers:\n  s:\n    " + k + ": x\n" }},
	}
	for _, lv := range levels {
		for _, k := range lv.keys {
			_, problems, _ := Parse([]byte(lv.wrap(k)), Options{})
			for _, p := range problems {
				if strings.Contains(p.Msg, `"`+k+`"`) && strings.Contains(p.Msg, "not used by mcpgw") {
					t.Errorf("%s is listed as known but the loader ignores it: %s", k, p.Msg)
				}
			}
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"mastr_key", "master_key", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
