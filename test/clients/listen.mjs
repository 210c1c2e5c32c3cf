// A modern (2026-07-28) caller for mcpgw's subscription tests, driven by test/e2e/subseed*_test.go:
// the TS SDK v2 client (@modelcontextprotocol/client) pinned to 2026-07-28, whose listen() opens
// subscriptions/listen and resolves on notifications/subscriptions/acknowledged.
//
// usage: node listen.mjs <url> <headers as a JSON object>
//
// It connects without a round trip (a prior modern verdict, so that the gateway's first
// server/discover is the test's own, as in the seed, whose caller sends one send_discover and no
// initialize), prints {"event":"connected"} and then reads commands from stdin, one JSON object a
// line, each with an "id" that its answer repeats:
//
//   {"id","cmd":"discover","timeoutMs"?}          -> {"id","result":DiscoverResult}
//   {"id","cmd":"list","what":"tools|prompts|resources","cursor"?}
//                                                 -> {"id","result":List…Result}: one page, uncached
//   {"id","cmd":"listen","filter":SubscriptionFilter}
//                                                 -> {"id","result":{"honored":honoredFilter}} on the ack
//   {"id","cmd":"close"}                          -> {"id","result":{"closed":"local|graceful|remote"}}
//   {"id","cmd":"exit"}                           -> {"id","result":{}} and exits 0
//
// A failed command answers {"id","error":message,"code"?}. Asynchronous events (no "id"):
//
//   {"event":"notification","method","params"}   a change notification delivered by the listen
//   {"event":"ended","how":"local|graceful|remote"}  the subscription ended (sub.closed)
//
// A failed connect prints {"event":"connect-failed","error"} and exits 1.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createInterface } from 'node:readline';

const [url, headersJSON = '{}'] = process.argv.slice(2);
const headers = JSON.parse(headersJSON);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const client = new Client({ name: 'subscription-seed', version: '1' },
  { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {}, url: {} } } });
for (const method of ['notifications/tools/list_changed', 'notifications/prompts/list_changed',
  'notifications/resources/list_changed', 'notifications/resources/updated']) {
  client.setNotificationHandler(method, (n) => out({ event: 'notification', method: n.method, params: n.params ?? {} }));
}
// The prior's capabilities only keep the client from refusing a method locally; the "discover"
// command replaces them with the gateway's.
const prior = { kind: 'modern', discover: { supportedVersions: ['2026-07-28'],
  capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true } } } };
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }), { prior });
} catch (e) {
  out({ event: 'connect-failed', error: String(e?.message ?? e) });
  process.exit(1);
}
out({ event: 'connected' });

let sub;
const commands = {
  discover: (c) => client.discover(c.timeoutMs ? { timeout: c.timeoutMs } : undefined),
  // One page, as the seed's session.list_tools() returns: listTools() without a cursor would walk
  // every page (and serve from the client's cache), so the raw request is sent instead.
  list: (c) => client.request({ method: `${c.what}/list`, params: c.cursor ? { cursor: c.cursor } : {} }),
  listen: async (c) => {
    sub = await client.listen(c.filter);
    sub.closed.then((how) => out({ event: 'ended', how }));
    return { honored: sub.honoredFilter };
  },
  close: async () => { await sub?.close(); return { closed: sub ? await sub.closed : null }; },
  exit: async () => { await sub?.close(); await client.close(); setTimeout(() => process.exit(0), 10); return {}; },
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  // Commands run concurrently: a listen blocks only until its ack.
  Promise.resolve()
    .then(() => commands[c.cmd](c))
    .then((result) => out({ id: c.id, result }), (e) => out({ id: c.id, error: String(e?.message ?? e), code: e?.code }));
}
await sub?.close();
await client.close();
process.exit(0);
