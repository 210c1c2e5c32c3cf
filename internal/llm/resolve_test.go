package llm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func models(names ...string) []Model {
	out := make([]Model, len(names))
	for i, n := range names {
		out[i] = Model{Name: n, Provider: "openai/" + n, APIBase: "http://127.0.0.1:1/v1"}
	}
	return out
}

func TestResolve(t *testing.T) {
	all := models("gpt-4o-mini", "Claude-Sonnet", "sampling-model", "gpt-4o")
	tests := []struct {
		name   string
		models []Model
		def    string
		hints  []string
		want   string
	}{
		{"exact", all, "sampling-model", []string{"gpt-4o"}, "gpt-4o"},
		{"exact beats earlier substring", all, "", []string{"gpt-4o"}, "gpt-4o"},
		{"substring case-insensitive", all, "sampling-model", []string{"claude"}, "Claude-Sonnet"},
		{"substring first in file order", all, "", []string{"GPT"}, "gpt-4o-mini"},
		{"first matching hint wins", all, "", []string{"nope", "sonnet", "gpt-4o"}, "Claude-Sonnet"},
		{"hint order not model order", all, "", []string{"sampling", "gpt-4o-mini"}, "sampling-model"},
		{"empty hint skipped", all, "sampling-model", []string{"", "sonnet"}, "Claude-Sonnet"},
		{"only empty hint → default", all, "sampling-model", []string{""}, "sampling-model"},
		{"no match → default", all, "sampling-model", []string{"llama"}, "sampling-model"},
		{"no hints → default", all, "sampling-model", nil, "sampling-model"},
		{"no hints, no default → first", all, "", nil, "gpt-4o-mini"},
		{"no match, no default → first", all, "", []string{"llama"}, "gpt-4o-mini"},
		{"duplicate names → first entry", []Model{
			{Name: "dup", Provider: "openai/one", APIBase: "http://h/v1"},
			{Name: "dup", Provider: "openai/two", APIBase: "http://h/v1"},
		}, "", []string{"dup"}, "dup/openai/one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Models: tt.models, Default: tt.def})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Resolve(tt.hints)
			if err != nil {
				t.Fatal(err)
			}
			name := got.Name
			if strings.Count(tt.want, "/") > 0 {
				name = got.Name + "/" + got.Provider
			}
			if name != tt.want {
				t.Errorf("Resolve(%q) = %s, want %s", tt.hints, name, tt.want)
			}
		})
	}
}

func TestResolveNoModels(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve([]string{"anything"})
	if !errors.Is(err, ErrNoModel) {
		t.Fatalf("err = %v, want ErrNoModel", err)
	}
	if !strings.HasPrefix(err.Error(), "No model could be resolved for MCP sampling. Please configure 'default_mcp_sampling_model'") {
		t.Errorf("err text = %q", err)
	}
	// CreateMessage reports the same error, after validating params.
	_, err = s.CreateMessage(t.Context(), []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":8}`))
	if !errors.Is(err, ErrNoModel) {
		t.Fatalf("CreateMessage err = %v, want ErrNoModel", err)
	}
}

func TestNewValidation(t *testing.T) {
	ok := Model{Name: "m", Provider: "openai/x", APIBase: "https://h.example/v1"}
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" means success
	}{
		{"valid", Config{Models: []Model{ok}, Default: "m"}, ""},
		{"default names nothing", Config{Models: []Model{ok}, Default: "other"}, `default_mcp_sampling_model "other" names no model_list entry`},
		{"default without models", Config{Default: "m"}, `default_mcp_sampling_model "m"`},
		{"ftp api_base", Config{Models: []Model{{Name: "m", Provider: "openai/x", APIBase: "ftp://h/v1"}}}, "http or https"},
		{"relative api_base", Config{Models: []Model{{Name: "m", Provider: "openai/x", APIBase: "/v1"}}}, "http or https"},
		{"no host", Config{Models: []Model{{Name: "m", Provider: "openai/x", APIBase: "http:///v1"}}}, "no host"},
		{"bad url", Config{Models: []Model{{Name: "m", Provider: "openai/x", APIBase: "http://h/%zz"}}}, "not a valid URL"},
		{"no name", Config{Models: []Model{{Provider: "openai/x", APIBase: "http://h"}}}, "model_list[0] has no model_name"},
		{"bad api_base without provider", Config{Models: []Model{{Name: "m", APIBase: "ftp://h"}}}, "http or https"},
		{"empty provider allowed", Config{Models: []Model{{Name: "m", APIBase: "http://h"}}}, ""},
		{"empty api_base allowed", Config{Models: []Model{{Name: "m", Provider: "anthropic/claude"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct {
		m    Model
		want string
	}{
		{Model{Provider: "openai/x", APIBase: "http://h:8/v1"}, "http://h:8/v1/chat/completions"},
		{Model{Provider: "openai/x", APIBase: "http://h:8/v1/"}, "http://h:8/v1/chat/completions"},
		{Model{Provider: "openai/x", APIBase: "https://h/openai/v1?api-version=1#frag"}, "https://h/openai/v1/chat/completions?api-version=1"},
		{Model{Provider: "openai/x"}, "https://api.openai.com/v1/chat/completions"},
		{Model{Provider: "gpt-4o"}, "https://api.openai.com/v1/chat/completions"},
		{Model{Provider: "anthropic/claude"}, ""},
	}
	for _, tt := range tests {
		got, err := endpoint(tt.m)
		if err != nil || got != tt.want {
			t.Errorf("endpoint(%#v) = %q, %v; want %q", tt.m, got, err, tt.want)
		}
	}
}

func TestProviderModel(t *testing.T) {
	for in, want := range map[string]string{
		"openai/gpt-x":        "gpt-x",
		"gpt-x":               "gpt-x",
		"hosted_vllm/meta/l3": "meta/l3",
		"openai/":             "",
		"":                    "",
	} {
		if got := (Model{Provider: in}).ProviderModel(); got != want {
			t.Errorf("ProviderModel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestModelFormattingHidesKey(t *testing.T) {
	m := Model{Name: "m", Provider: "openai/x", APIBase: "http://h/v1", APIKey: "sk-very-secret"}
	for _, s := range []string{fmt.Sprint(m), fmt.Sprintf("%v", m), fmt.Sprintf("%#v", m), fmt.Sprintf("%s", m)} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("formatted model leaks the key: %s", s)
		}
	}
}
