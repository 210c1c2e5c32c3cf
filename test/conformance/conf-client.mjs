// Generic MCP client for the conformance suite's client leg (scripts/conformance.sh).
//
// usage: node conf-client.mjs [...] <url>
//
// The suite runs it once per client scenario with the scenario server's URL as the LAST argument,
// MCP_CONFORMANCE_SCENARIO=<name> and MCP_CONFORMANCE_PROTOCOL_VERSION=<revision>. It is the TS SDK
// v2 client (@modelcontextprotocol/client) with no scenario-specific logic:
//
//   - revision <= 2025-11-25: legacy lifecycle (initialize); 2026-07-28 and later: pinned to that
//     revision (stateless, _meta on every request, no fallback);
//   - declares elicitation (form, applyDefaults), sampling and roots and answers them (also as MRTR
//     input_required rounds, which the SDK fulfils automatically);
//   - lists the tools; when MCP_CONFORMANCE_CONTEXT carries {"toolCalls":[{name,arguments}]} it
//     makes exactly those calls, otherwise it calls each listed tool with dummy values for its
//     REQUIRED parameters only (number/integer 1, boolean true, string "x", object {}, array []),
//     so optional parameters stay omitted;
//   - closes the connection (DELETE of a legacy session).
//
// It prints one line per step on stdout (the suite keeps it in stdout.txt) and exits 0, or 1 on a
// connection/listing error. It never waits longer than CONF_CLIENT_TIMEOUT_MS (default 20000).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv.at(-1);
const rev = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? '';
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
let context = {};
try {
  context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
} catch {
  context = {};
}
const timeoutMs = Number(process.env.CONF_CLIENT_TIMEOUT_MS || 20000);

setTimeout(() => {
  console.log(`timeout after ${timeoutMs} ms`);
  process.exit(2);
}, timeoutMs).unref();

const modern = rev !== '' && rev >= '2026';
const client = new Client(
  { name: 'mcpgw-conf-client', version: '0.0.1' },
  {
    capabilities: { elicitation: { form: { applyDefaults: true } }, sampling: {}, roots: {} },
    ...(modern ? { versionNegotiation: { mode: { pin: rev } } } : {}),
  },
);
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: {} }));
client.setRequestHandler('sampling/createMessage', async () => ({
  role: 'assistant',
  model: 'conf-client',
  content: { type: 'text', text: 'ok' },
}));
client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///tmp/conf-client', name: 'conf' }] }));

function dummy(schema) {
  switch (schema?.type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'object':
      return {};
    case 'array':
      return [];
    default:
      return 'x';
  }
}

function args(tool) {
  const props = tool.inputSchema?.properties ?? {};
  const required = tool.inputSchema?.required ?? [];
  return Object.fromEntries(required.filter((k) => k in props).map((k) => [k, dummy(props[k])]));
}

console.log(`scenario=${scenario} revision=${rev || '(none)'} url=${url} mode=${modern ? `pin ${rev}` : 'legacy'}`);
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  console.log(`connected: era=${client.getProtocolEra?.()} version=${client.getNegotiatedProtocolVersion?.()}`);
  const { tools } = await client.listTools();
  console.log(`tools: ${tools.map((t) => t.name).join(',')}`);
  const calls = Array.isArray(context.toolCalls)
    ? context.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments ?? {} }))
    : tools.map((t) => ({ name: t.name, arguments: args(t) }));
  for (const c of calls) {
    try {
      const res = await client.callTool(c);
      console.log(`call ${c.name}: ${JSON.stringify(res).slice(0, 300)}`);
    } catch (e) {
      console.log(`call ${c.name}: ERR ${e?.message ?? e}`);
    }
  }
  await client.close();
  console.log('closed');
  process.exit(0);
} catch (e) {
  console.log(`ERR ${e?.code ?? ''} ${e?.message ?? e}`);
  process.exit(1);
}
