package front

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func decodeSpecBody(body string, update bool) (MCPServerSpec, error) {
	r := httptest.NewRequest(http.MethodPost, "/v1/mcp/server", strings.NewReader(body))
	return decodeServerSpec(r, httptest.NewRecorder(), update)
}

// TestDecodeServerSettings: the settings a config server has are read under their config
// names, forward_identity from a string or a boolean; a wrong JSON type is refused naming the
// field; an update sets only what it carries.
func TestDecodeServerSettings(t *testing.T) {
	spec, err := decodeSpecBody(`{"server_name":"s","rpm":5,"spec_path":"x.yaml","protocol_version":"2025-06-18",
		"forward_identity":true,"allow_elicitation":true,"allow_sampling":false,"pin_tool_definitions":true,
		"pinned_tools":["a",""],"guardrails":["g"]}`, false)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerSettingsSpec{SpecPath: "x.yaml", ProtocolVersion: "2025-06-18", ForwardIdentity: "true",
		AllowElicitation: true, PinToolDefinitions: true, PinnedTools: []string{"a"}, Guardrails: []string{"g"}}
	if !reflect.DeepEqual(spec.Settings, want) || spec.RPM == nil || *spec.RPM != 5 {
		t.Fatalf("settings = %+v rpm %v, want %+v", spec.Settings, spec.RPM, want)
	}
	for _, f := range []string{"rpm", "spec_path", "forward_identity", "allow_sampling", "pinned_tools", "guardrails"} {
		if !spec.Present[f] {
			t.Errorf("%s not marked present", f)
		}
	}
	for body, field := range map[string]string{
		`{"forward_identity":3}`: "forward_identity", `{"allow_sampling":"yes"}`: "allow_sampling",
		`{"pinned_tools":"a"}`: "pinned_tools", `{"guardrails":[1]}`: "guardrails", `{"rpm":-1}`: "rpm",
		`{"protocol_version":false}`: "protocol_version", `{"pin_tool_definitions":1}`: "pin_tool_definitions",
	} {
		_, err := decodeSpecBody(body, false)
		se, ok := err.(*ServerError)
		if !ok || se.Status != http.StatusBadRequest || se.Param != field {
			t.Errorf("%s: %v, want a 400 naming %s", body, err, field)
		}
	}
	up, err := decodeSpecBody(`{"server_id":"s","guardrails":[]}`, true)
	if err != nil || !up.Present["guardrails"] || up.Present["pin_tool_definitions"] || up.Settings.Guardrails != nil {
		t.Fatalf("update = %+v, %v", up, err)
	}
}

// FuzzDecodeServerSpec: any body decodes or is refused with a *ServerError, never a panic,
// and what decodes keeps the bounds.
func FuzzDecodeServerSpec(f *testing.F) {
	for _, s := range []string{`{"server_name":"s","guardrails":["g"],"forward_identity":"jwt"}`, `{"pinned_tools":[""]}`,
		`{"forward_identity":false,"rpm":0}`, `{"credentials":{"auth_value":"x"}}`, `[]`, `{"mcp_info":{}}`} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, update bool) {
		spec, err := decodeSpecBody(body, update)
		if err != nil {
			if _, ok := err.(*ServerError); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		for _, list := range [][]string{spec.Settings.PinnedTools, spec.Settings.Guardrails} {
			if len(list) > maxListLen {
				t.Fatalf("list of %d entries", len(list))
			}
			for _, s := range list {
				if s == "" || len(s) > maxIDLen {
					t.Fatalf("entry %q", s)
				}
			}
		}
		if len(spec.Settings.SpecPath) > maxServerString || len(spec.Settings.ProtocolVersion) > maxServerString ||
			len(spec.Settings.ForwardIdentity) > maxServerString {
			t.Fatal("a string past its bound")
		}
	})
}
