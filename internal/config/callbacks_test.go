package config

import (
	"reflect"
	"testing"
)

// TestCallbacks: litellm_settings.callbacks is read as lower-cased names,
// a list or one name alone, with no warning.
func TestCallbacks(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"litellm_settings:\n  callbacks: [\"OTEL\", langfuse]\n", []string{"otel", "langfuse"}},
		{"litellm_settings:\n  callbacks: otel\n", []string{"otel"}},
		{"litellm_settings: {}\n", nil},
	} {
		cfg, problems := mustParse(t, "mcp_servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n"+tc.src, Options{})
		if len(problems) != 0 || len(cfg.LiteLLM.Callbacks)+len(tc.want) > 0 && !reflect.DeepEqual(cfg.LiteLLM.Callbacks, tc.want) {
			t.Errorf("%q: callbacks %v, problems %v; want %v", tc.src, cfg.LiteLLM.Callbacks, problems, tc.want)
		}
	}
}
