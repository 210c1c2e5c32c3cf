package tracing

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of the settings the OTEL_* environment leaves unset.
const (
	// DefaultEndpoint is the OTLP/HTTP traces endpoint used when tracing is
	// switched on by callbacks alone (the OpenTelemetry default).
	DefaultEndpoint = "http://localhost:4318/v1/traces"
	// DefaultServiceName is service.name unless OTEL_SERVICE_NAME is set.
	DefaultServiceName = "mcpgw"
)

// Settings is what the tracer is built from.
type Settings struct {
	// Endpoint is the full URL spans are POSTed to (…/v1/traces).
	Endpoint string
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_HEADERS);
	// they may hold credentials and are never logged.
	Headers map[string]string
	// ServiceName is the service.name resource attribute.
	ServiceName string
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// Sampler decides which traces are recorded (OTEL_TRACES_SAMPLER).
	Sampler sdktrace.Sampler
}

// FromEnv reads the standard OTEL_* variables through lookup and reports
// whether tracing is on: it is when callbacks names "otel" (LiteLLM's
// switch) or an OTLP endpoint variable is set, unless OTEL_SDK_DISABLED is
// true or OTEL_TRACES_EXPORTER is "none". An invalid value is an error.
func FromEnv(lookup func(string) (string, bool), callbacks []string) (Settings, bool, error) {
	get := func(k string) string {
		v, ok := lookup(k)
		if !ok { // an unset variable's value means nothing
			return ""
		}
		return strings.TrimSpace(v)
	}
	on := false
	for _, c := range callbacks {
		if strings.EqualFold(strings.TrimSpace(c), "otel") {
			on = true
		}
	}
	base, traces := get("OTEL_EXPORTER_OTLP_ENDPOINT"), get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base != "" || traces != "" {
		on = true
	}
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(get("OTEL_TRACES_EXPORTER"), "none") {
		on = false
	}
	if !on {
		return Settings{}, false, nil
	}
	s := Settings{Endpoint: DefaultEndpoint, ServiceName: DefaultServiceName}
	switch {
	case traces != "":
		s.Endpoint = traces
	case base != "":
		s.Endpoint = strings.TrimRight(base, "/") + "/v1/traces"
	}
	if u, err := url.Parse(s.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, false, fmt.Errorf("the OTLP traces endpoint must be an http(s) URL")
	}
	if v := get("OTEL_SERVICE_NAME"); v != "" {
		s.ServiceName = v
	}
	var err error
	if s.Headers, err = parseHeaders(get("OTEL_EXPORTER_OTLP_HEADERS"), get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")); err != nil {
		return Settings{}, false, err
	}
	if s.Sampler, err = parseSampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return Settings{}, false, err
	}
	return s, true, nil
}

// parseHeaders reads the W3C-baggage-like "k=v,k2=v2" lists (values
// percent-encoded); the traces-specific list wins per key.
func parseHeaders(lists ...string) (map[string]string, error) {
	var out map[string]string
	for _, list := range lists {
		for _, item := range strings.Split(list, ",") {
			if strings.TrimSpace(item) == "" {
				continue
			}
			k, v, ok := strings.Cut(item, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value pairs")
			}
			dv, err := url.PathUnescape(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: the value of %q is not percent-encoded", k)
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = dv
		}
	}
	return out, nil
}

// parseSampler reads OTEL_TRACES_SAMPLER and its argument; the default is
// parentbased_always_on.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") && arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1")
		}
		ratio = r
	}
	switch strings.ToLower(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
}
