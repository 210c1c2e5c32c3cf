// Package openapimcp serves an OpenAPI 3 document's operations as MCP tools: the server of a
// spec_path upstream (an upstream.LocalServer behind upstream.TransportLocal, so listing,
// calling, permissions, rules, limits and metrics treat it as any other upstream).
//
// Each operation of paths becomes one tool: its name is the operationId, else method and path
// (e.g. put_dogs_dogId_walks), reduced to [A-Za-z0-9_-] and 64 bytes, with _2, _3… on a
// clash; its description the summary and description; its inputSchema an object with one
// property per path, query and header parameter (path-level parameters included, an
// operation's own winning; a name used twice gets its location as prefix, e.g. query_id) and
// "body" for a JSON request body (application/json or any +json media type). Annotations
// derive from the method: GET, HEAD and OPTIONS are read-only, DELETE destructive, and every
// tool is open-world. A call sends the request to the server's url (else the document's first
// servers[].url, its variables at their defaults) with the session's headers (the server's
// auth_type credential and static_headers, exactly as an HTTP upstream gets them); the result
// is the response body as one text content, JSON indented, and a non-2xx status is an isError
// result "HTTP <status> <text>: <body, at most 4 KiB>".
//
// Bounds: a document of at most MaxSpecBytes (4 MiB), at most 1 000 000 YAML nodes after alias
// expansion and 128 levels deep, at most MaxOperations (1024) operations, and 200 000 schema
// nodes inlined for all tools together (past it a schema is left open); a response body of at
// most MaxResponseBytes (1 MiB; longer is cut and says so). Redirects are never followed on
// calls. A URL spec_path is fetched once, when the server's client is built, within 30 s.
//
// Design decisions:
//
//   - Our own parser over go.yaml.in/yaml/v3 (already a dependency; YAML is a superset of
//     JSON) instead of github.com/getkin/kin-openapi: kin-openapi would add yaml/v4,
//     gorilla/mux, a JSON-schema validator and jsonpointer for the small part used here
//     (paths, operations, parameters, request bodies, local refs), and its loader can follow
//     external refs to files and URLs. Here only local refs ("#/...") are followed; any other
//     ref becomes an open schema, so a document can never make the gateway read another file
//     or URL. Recursive schemas are cut where a ref reappears on its own path.
//   - Header parameters never replace the server's own headers (its credentials), so a caller
//     cannot override or read them, and a header value with CR or LF is refused. Error results
//     quote the API's body (it is the API's answer to the caller, like any tool result) but
//     never a request header.
//   - Cookie parameters and non-JSON request bodies are not offered: they cannot be expressed
//     faithfully in one JSON argument object.
//   - The upstream is a legacy-era session with itself (initialize, tools/list in one page,
//     tools/call, ping); downstream callers of both eras reach it through the gateway.
package openapimcp
