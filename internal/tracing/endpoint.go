package tracing

import "net/url"

// endpointHost is the host:port of an endpoint URL, for logs (never its
// path or query, which may carry a key).
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}
