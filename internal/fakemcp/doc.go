// Package fakemcp is an in-process fake MCP upstream over streamable HTTP, for tests of the
// gateway's client side (internal/catalog, internal/gateway). It is a test helper: import it
// only from _test.go files.
//
// It exists for what real servers don't produce on demand: HTTP error statuses and
// WWW-Authenticate challenges, delayed or abandoned answers, arbitrary list contents and
// caching hints, per-method handler overrides, and a record of every request (method, headers,
// params) with protocol violations of the client reported as test errors. Behaviour that real
// servers do produce is tested against real third-party peers via internal/testpeers.
//
// It also holds LogBuffer, a concurrency-safe slog capture shared by those tests.
package fakemcp
