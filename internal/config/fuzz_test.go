package config

import (
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Parse: it must never panic, every problem must have a line,
// and a successful parse must have no errors and satisfy the documented defaults.
func FuzzLoad(f *testing.F) {
	seeds := []string{
		"",
		"mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n",
		"mcp_servers:\n  s:\n    transport: stdio\n    command: go\n    args: [run, .]\n    env: {A: os.environ/A}\n",
		"a: &a [*a]\n",
		"x: &x {<<: *x}\nmcp_servers: {s: {<<: *x}}\n",
		"mcp_servers:\n  s: {url: 'http://a/', static_headers: {X: y}, scopes: 'a b', timeout: 1.5, rpm: 3}\n",
		"general_settings: {mcp_advertised_versions: [2026-07-28], master_key: os.environ/K}\n",
		"model_list: [{model_name: m, litellm_params: {model: openai/x}}]\nlitellm_settings: {default_mcp_sampling_model: m}\n",
		"--- \n...\n---\n[1, 2]\n",
		"mcp_servers:\n\t- x",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lookup := func(name string) (string, bool) {
			if strings.HasPrefix(name, "SET") {
				return "http://127.0.0.1:1/" + name, true
			}
			return "", false
		}
		cfg, problems, err := Parse(data, Options{LookupEnv: lookup})
		for _, p := range problems {
			if p.Line < 1 || p.Msg == "" || (p.Severity != SeverityError && p.Severity != SeverityWarning) {
				t.Fatalf("bad problem %+v", p)
			}
		}
		if (err != nil) != HasErrors(problems) {
			t.Fatalf("err = %v but HasErrors = %v", err, HasErrors(problems))
		}
		if err != nil {
			if cfg != nil {
				t.Fatal("config returned with an error")
			}
			return
		}
		if len(cfg.General.MCPAdvertisedVersions) == 0 {
			t.Fatal("no advertised versions")
		}
		for _, s := range cfg.Servers {
			if s.ServerID == "" || s.Transport == "" || s.ProtocolVersion == "" || s.Line < 1 {
				t.Fatalf("server without defaults: %+v", s)
			}
		}
	})
}
