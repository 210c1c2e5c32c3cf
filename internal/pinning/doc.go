// Package pinning protects callers from an upstream that changes what a tool does after it
// was approved ("rug pulls"): it records a digest of each pinned tool's definition and
// quarantines a tool whose definition changes, until a proxy admin approves the new one.
//
// Design decisions:
//
//   - What is pinned: every tool of a server with pin_tool_definitions, the tools named in
//     pinned_tools, every tool of a server an admin pinned (POST /v1/mcp/server/{id}/pin,
//     stored as the server's own row, tool ""), and any tool with a row of its own (an admin
//     pinned it by name, or approved it after a quarantine). A tool's definition is its name,
//     description, title, inputSchema, outputSchema and annotations; each is digested
//     (SHA-256) as canonical JSON (members sorted, numbers as written, no whitespace), so an
//     upstream re-serialising an equal definition changes nothing, and the parts' digests say
//     which parts changed (description, title, input_schema, output_schema, annotations).
//     The texts are never logged or stored. Canonicalising is most of a listing's cost, and
//     upstreams list the same bytes again and again: each server keeps its last listing's
//     definitions by the item's bytes, and an item listed again byte for byte is not
//     digested again (a changed byte is; the memory is one listing per server). The whole
//     listing again in the same order is told by comparing its bytes with the last one's
//     (no hashing) and reuses that listing's definitions as they are; looking each item up
//     by its bytes in a map was the next largest cost of an unchanged listing.
//   - Where: the catalog calls Vet with every tools/list fresh from an upstream, before it
//     is served or cached, so the listing that sees a change already hides the tool, for
//     every caller (the decision is per server and tool, not per caller). Listings (cached or
//     not) leave hidden tools out (Hidden); the gateway refuses a call to one (Check) with a
//     JSON-RPC error, without contacting the upstream, even when the caller cached the name.
//     A tool back at its approved definition is served again; a tool the upstream removed is
//     just gone (its pin stays, and applies if it comes back).
//   - First sight wins: a pinned tool seen for the first time is pinned as listed (trust on
//     first use). The store write keeps a row already there (another replica's, an
//     admin's), and the pins are read again after it, so replicas agree on one approved
//     definition.
//   - Persistence and replicas: pins live in the store (tables mcp_tool_pins and, for the
//     audit trail, mcp_tool_pin_events; migrations/00007), so they survive restarts and
//     replicas sharing Postgres share them. Without a data dir a MemoryStore keeps them in
//     the process (and its last 1000 events). Each replica holds a server's pins read from
//     the store for Config.Refresh (DefaultRefresh, 2 s) before a listing or a call reads
//     them again: a quarantine or an approval on one replica holds on the others within it
//     for calls, and for listings once they list the server again. A failed read keeps the
//     pins last read (WARN); a failed write keeps the decision in this replica (ERROR).
//   - Every quarantine is a WARN naming the server, the tool, the reason and the parts that
//     changed, a Config.OnQuarantine call (internal/app counts mcpgw_tool_quarantines_total)
//     and an audit row (pinned, quarantined, restored, approved, unpinned, with the admin for
//     the last two).
//   - Guardrails at listing: Configure's Judge (internal/guardrail's Describe: the pre-call
//     guardrails of the server) is asked about each description whose definition is not the
//     approved one; a block quarantines the tool (reason "guardrail") like a change; an
//     error (a fail-closed guardrail that could not be asked) hides the tool from listings
//     and calls ("unchecked") until a later listing is judged, without quarantining it.
//     Verdicts are remembered per server, tool and definition digest, so an unchanged
//     listing asks nothing; the descriptions of one listing are judged 8 at once (each
//     goroutine recovers a panic and ends with its guardrail's timeout).
//   - Bounds: remembered verdicts at most 10000 and servers held at most 10000 (each starts
//     over when full; pins are read from the store again). A server's pins are as many as
//     its tools.
package pinning
