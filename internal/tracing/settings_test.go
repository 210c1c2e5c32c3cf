package tracing

import (
	"strings"
	"testing"
)

func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		callbacks []string
		on        bool
		endpoint  string
	}{
		{"off by default", nil, nil, false, ""},
		{"other callbacks only", nil, []string{"langfuse"}, false, ""},
		{"callbacks otel, default endpoint", nil, []string{"langfuse", "OTEL"}, true, DefaultEndpoint},
		{"base endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, nil, true, "http://c:4318/v1/traces"},
		{"traces endpoint wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t/x"}, nil, true, "https://t/x"},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true"}, []string{"otel"}, false, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, nil, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, on, err := FromEnv(lookupOf(tc.env), tc.callbacks)
			if err != nil || on != tc.on || s.Endpoint != tc.endpoint {
				t.Fatalf("FromEnv = %q %v %v, want %q %v", s.Endpoint, on, err, tc.endpoint, tc.on)
			}
		})
	}
}

func TestFromEnvSettings(t *testing.T) {
	s, on, err := FromEnv(lookupOf(map[string]string{
		"OTEL_SERVICE_NAME":                 "edge",
		"OTEL_EXPORTER_OTLP_HEADERS":        "api-key=a%20b, x=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x=2",
		"OTEL_TRACES_SAMPLER":               "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":           "0.25",
	}), []string{"otel"})
	if err != nil || !on {
		t.Fatal(on, err)
	}
	if s.ServiceName != "edge" || s.Headers["api-key"] != "a b" || s.Headers["x"] != "2" {
		t.Fatalf("settings %+v", s)
	}
	if d := s.Sampler.Description(); !strings.Contains(d, "TraceIDRatioBased{0.25}") {
		t.Fatalf("sampler %s", d)
	}
}

func TestFromEnvRejects(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "sometimes"},
		{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://c:4317"},
	} {
		if _, _, err := FromEnv(lookupOf(env), []string{"otel"}); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}
