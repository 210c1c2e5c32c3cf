// Package spend is the gateway's spend and audit log: a Sink on the observation seam
// (internal/observe) that turns every tools/call and tools/list the gateway answers into one
// row of the store's spend_logs (LiteLLM's LiteLLM_SpendLogs names: call_type
// call_mcp_tool or list_mcp_tools, the namespaced tool name as model, the server, the key's
// hash and alias, team, user, end user, organisation, status, fault class, start and end
// time, spend), and a Writer that commits the rows in batches.
//
// Design decisions:
//
//   - Cost: a tools/call costs its server's mcp_info.mcp_server_cost_info price,
//     tool_name_to_cost_per_query for the tool (by the upstream name, or the name as called)
//     else default_cost_per_query, when it was routed to one server and answered without a
//     fault or JSON-RPC error; a tool's own in-band error (isError) still cost the upstream
//     the call and is charged. Refused, failed calls and listings cost 0. The Sink sets the
//     request's Cost in EndRequest, so sinks after it (metrics) read it. Servers kept in the
//     store (/v1/mcp/server) have no cost configuration: their calls cost 0.
//   - Arguments and results are never stored: the record carries names and ids only.
//     LiteLLM's store_prompts_in_spend_logs is not supported (the rows have no column for
//     them).
//   - The Writer never blocks a call: Add appends the row to a bounded queue (DefaultQueueSize
//     10 000 rows; a slice under a mutex, the writer's goroutine woken only when a batch
//     starts, gets its first row that costs something, or fills: a channel woke it for every
//     row, a goroutine hand-off per call) and returns. A row that finds the queue full is
//     folded into the aggregate of its UTC day, key, team and server (at most
//     DefaultMergeSize, 1 000, aggregates; store.SpendRow.Calls), written with the next batch:
//     it adds its calls and spend to the keys' and teams' spend and the daily rollup, so
//     budgets and /spend/daily still count every call, and only its spend_logs row is lost
//     (Stats.Merged). Rejected: dropping the row (its spend then escaped every budget) and
//     waiting for room (a slow database would slow every call). A row with no aggregate and
//     no room for one is dropped and counted (Stats.Dropped); both are logged at shutdown.
//     A goroutine commits a batch when DefaultBatchSize
//     (500) rows are waiting, or DefaultFlushInterval (50 ms) after the first of them that
//     costs something, or DefaultFreeFlushInterval (1 s) after the first row when none of
//     them costs anything, in one store transaction that also adds to the keys' and teams'
//     spend and the daily rollup. Why two intervals: a commit's cost is mostly per commit,
//     not per row, and rows that cost 0 (every call of a server without
//     mcp_server_cost_info) change no spend a budget reads, so they wait for more rows to
//     share a commit; /spend/logs and the rollup show them up to a second later (LiteLLM
//     batches its spend writes for several seconds). A row that costs something is written
//     50 ms after it, with the free rows before it. Rows' request_ids are time-ordered
//     (store.NewTimeID), so a batch appends to the indexes. A
//     failed write is retried 3 times 100 ms apart, then its rows are counted as failed. At
//     ~2 000 rows per second and a few ms per batch the queue holds minutes of Postgres
//     trouble before folding anything; a bigger queue would only hold more memory (each
//     row is ~300 bytes).
//   - Close stops Add (later rows are dropped), writes what is queued and returns when done
//     or when its context ends (internal/app allows 5 s). A panic in a write is recovered
//     and its batch counted as failed; the goroutine goes on.
//   - Budgets (max_budget on keys and teams, enforced in internal/app before a tools/call is
//     sent) read spend through the store's lookup cache plus what this replica's Writer owes
//     (Writer.Owed: the spend of rows accepted or folded but not yet written, by key and
//     team, kept under the writer's mutex and read without it while nothing is owed). So a
//     call's cost counts on this replica as soon as the call ends, not after its commit;
//     other replicas see it once the commit forgets the key's and team's cached rows (at most
//     FlushInterval plus a write; a burst of calls in flight meanwhile may overshoot, as in
//     LiteLLM). Between the commit and the writer forgetting what it owed (microseconds) a
//     cost counts twice: a refusal at the edge of a budget errs towards refusing. A failed
//     write forgets what its rows owed, as it loses them. A budget_duration returns spend to
//     0 every period (store.Budget); the app runs store.ResetBudgets on a Loop so idle keys
//     show it.
//   - Retention: rows are kept forever by default (LiteLLM's default). With
//     general_settings.maximum_spend_logs_retention_period (a LiteLLM duration such as "7d")
//     a Retention goroutine deletes rows that started longer ago than that: a sweep at start,
//     then every maximum_spend_logs_retention_interval (DefaultRetentionInterval, one day),
//     DefaultRetentionBatch (1 000) rows per DELETE with a short pause between batches, so a
//     large backlog never holds a long lock. A failed sweep is logged and tried again at the
//     next interval; a panic in one is recovered and logged; Stop (at App close, before the
//     writer's flush) cancels a DELETE in flight and ends the goroutine. Each replica runs
//     its own sweeps; deleting is idempotent, so replicas need no lock (LiteLLM takes a Redis
//     lock only to save work).
package spend
