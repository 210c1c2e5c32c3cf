// Roots isolation check for mcpgw, driven by test/e2e/roots_test.go.
//
// usage: node roots.mjs <v1|v2> <url> <key>
//
// Opens two legacy sessions through the gateway with the same key, one offering the root
// file:///alpha-workspace and one file:///beta-workspace, and calls everything-get-roots-list
// from each in turn (alpha, beta, alpha, beta). Prints ONE JSON line on stdout,
// {"answers":[text, text, text, text]}, and exits 0; on failure {"error":…} and exits 1.
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPTransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HTTPTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [sdk, url, key] = process.argv.slice(2);
setTimeout(() => { console.log(JSON.stringify({ error: 'timed out' })); process.exit(2); }, 60_000).unref();

async function open(root) {
  const info = { name: `roots-${root}`, version: '0.0.1' };
  const requestInit = { headers: { Authorization: `Bearer ${key}` } };
  const roots = { roots: [{ uri: `file:///${root}-workspace`, name: root }] };
  let client;
  let transport;
  if (sdk === 'v1') {
    client = new ClientV1(info, { capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler(ListRootsRequestSchema, async () => roots);
    transport = new HTTPTransportV1(new URL(url), { requestInit });
  } else {
    client = new ClientV2(info, { versionNegotiation: { mode: 'legacy' }, capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler('roots/list', async () => roots);
    transport = new HTTPTransportV2(new URL(url), { requestInit });
  }
  await client.connect(transport);
  return client;
}

const text = (r) => (r?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

try {
  const a = await open('alpha');
  const b = await open('beta');
  const answers = [];
  for (const c of [a, b, a, b]) {
    answers.push(text(await c.callTool({ name: 'everything-get-roots-list', arguments: {} })));
  }
  console.log(JSON.stringify({ answers }));
  await a.close();
  await b.close();
  process.exit(0);
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.message ?? err) }));
  process.exit(1);
}
