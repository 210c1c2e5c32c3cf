// Cancellation through mcpgw with the real v1 TypeScript SDK client, driven by
// test/e2e/cancel_test.go.
//
// usage: node cancel.mjs <v1-http|v1-sse> <url> <key> <tool>
//
// It connects, calls <tool> (server-everything's trigger-long-running-operation, 6 s, with a
// progress callback) with an AbortSignal, aborts it at its first progress (the SDK then sends
// notifications/cancelled and keeps its streams open), waits 8 s and prints ONE JSON line:
//
//   {"mode","aborted":true|false,"late":[messages received for the cancelled id]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, url, key, tool] = process.argv.slice(2);
setTimeout(() => { process.stdout.write(JSON.stringify({ mode, error: 'timed out' }) + '\n'); process.exit(2); }, 30_000).unref();

const headers = { Authorization: `Bearer ${key}` };
const transport = mode === 'v1-sse'
  ? new SSEClientTransport(new URL(url), { requestInit: { headers }, eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...init?.headers, ...headers } }) } })
  : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: 'cancel', version: '1' });
await client.connect(transport);

let callID;
const send = transport.send.bind(transport);
transport.send = (msg, opts) => {
  if (msg.method === 'tools/call') callID = msg.id;
  return send(msg, opts);
};
const late = [];
const onmessage = transport.onmessage;
transport.onmessage = (msg, extra) => {
  if (callID !== undefined && msg.id === callID && ('result' in msg || 'error' in msg)) late.push(msg);
  onmessage(msg, extra);
};

const ac = new AbortController();
let aborted = false;
// Aborted at the first progress notification (after 2 s): the upstream is running the tool.
const call = client.callTool({ name: tool, arguments: { duration: 6, steps: 3 } }, undefined, { signal: ac.signal, onprogress: () => ac.abort('user') })
  .catch(() => { aborted = true; });
await call;
await new Promise((r) => setTimeout(r, 8000));
process.stdout.write(JSON.stringify({ mode, aborted, late }) + '\n');
process.exit(0);
