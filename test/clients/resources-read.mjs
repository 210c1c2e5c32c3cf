// What a TypeScript SDK v2 client sees of one MCP endpoint, for comparing a server direct with
// the same server through mcpgw; driven by internal/front/fidelity_test.go (runTSFidelity).
//
// usage: node resources-read.mjs <legacy|modern> <url> <key|-> <resource-uri>
//
// It connects (legacy: initialize; modern: pinned to 2026-07-28, server/discover), lists
// resources, reads <resource-uri> (the SDK validates every result against its schemas: a
// 2026-07-28 resources/read without ttlMs/cacheScope is rejected) and prints ONE JSON line:
//
//   {"mode","era","instructions","capabilities":[names],"resources","read_contents"}
//
// and exits 0; on failure {"mode","step","error"} and exit 1; after 30 s exit 2.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [mode, url, key, uri] = process.argv.slice(2);
let step = 'start';
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const fail = (err, code) => {
  emit({ mode, step, error: String(err?.message ?? err) });
  process.exit(code);
};
setTimeout(() => fail(new Error('timed out after 30s'), 2), 30_000).unref();
process.on('unhandledRejection', (err) => fail(err, 1));

async function main() {
  if (!['legacy', 'modern'].includes(mode) || !url || !key || !uri) {
    throw new Error('usage: node resources-read.mjs <legacy|modern> <url> <key|-> <resource-uri>');
  }
  const requestInit = key === '-' ? {} : { headers: { Authorization: `Bearer ${key}` } };
  const negotiation = mode === 'modern' ? { pin: '2026-07-28' } : 'legacy';
  const client = new Client({ name: 'mcpgw-fidelity', version: '0.0.1' }, { versionNegotiation: { mode: negotiation } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  step = 'connect';
  await client.connect(transport);
  const caps = client.getServerCapabilities() ?? {};
  step = 'resources/list';
  const listed = await client.listResources();
  step = `resources/read ${uri}`;
  const read = await client.readResource({ uri });
  const out = {
    mode,
    era: client.getNegotiatedProtocolVersion(),
    instructions: client.getInstructions() ?? '',
    capabilities: ['tools', 'prompts', 'resources', 'completions', 'logging'].filter((k) => caps[k] !== undefined),
    resources: listed.resources.length,
    read_contents: read.contents?.length ?? 0,
  };
  if (transport.sessionId) {
    step = 'DELETE session';
    await transport.terminateSession();
  }
  await client.close();
  emit(out);
  process.exit(0);
}

main().catch((err) => fail(err, 1));
