// One run of the direct-vs-gateway fidelity table, driven by test/e2e/fidelity_test.go.
//
// usage: node fidelity.mjs '<spec JSON>'
//
// spec: {
//   "client": "v1" | "v2-legacy" | "v2-modern",
//   "target": {"kind": "stdio", "command", "args", "env"} | {"kind": "http"|"sse", "url"},
//   "key": "sk-..." (sent as Authorization: Bearer when set: the gateway),
//   "modern": true   (v2-modern only: pin 2026-07-28; false lets it negotiate, as it must
//                     against a 2025-era server directly),
//   "root": "file:///...", the one root this client reports,
//   "ops": ["initialize", "tools/list", ...], the operations to run, in order,
//   "call": {"name", "arguments"}, "prompt": {"name", "arguments"}, "resource": "uri"
// }
//
// Prints ONE JSON line {"ops": {op: result | {"error", "code"}}, "ms": {op: milliseconds}} as the
// last line of stdout (the SDKs may print warnings before it) and exits 0; results are raw (the
// Go test normalises them). Operations:
//   initialize            {instructions, capabilities, protocolVersion}
//   tools/list ...        the full lists (every page)
//   tools/call            the call's result; prompts/get, resources/read likewise
//   roots                 get-roots-list's text (the server asks this client for its roots)
//   logging               setLevel debug, toggle-simulated-logging, then count the
//                         notifications/message received within LOG_WAIT_MS after the toggle
//   cancellation          trigger-long-running-operation (1 s) aborted after 300 ms: how it ended
//   elicitation/form      trigger-elicitation-request, answered accept {name: "fidelity"}
//   elicitation/url       trigger-url-elicitation, answered accept
// A run that takes longer than 60 s prints {"error": "timeout"} and exits 2.
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPv2, SSEClientTransport as SSEv2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport as SSEv1 } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HTTPv1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const MODERN = '2026-07-28';
const LOG_WAIT_MS = 1_500; // server-everything logs once right after the toggle (then every 5 s)
const spec = JSON.parse(process.argv[2] ?? '{}');

setTimeout(() => {
  process.stdout.write(JSON.stringify({ error: 'timeout' }) + '\n');
  process.exit(2);
}, 60_000).unref();

const info = { name: 'mcpgw-fidelity', version: '0.0.1' };
const capabilities = { roots: { listChanged: true }, elicitation: { form: {}, url: {} } };
let logCount = 0;

function transportFor(v1) {
  const t = spec.target;
  const requestInit = spec.key ? { headers: { Authorization: `Bearer ${spec.key}` } } : undefined;
  if (t.kind === 'stdio') {
    const Stdio = v1 ? StdioV1 : StdioV2;
    return new Stdio({ command: t.command, args: t.args ?? [], env: { ...process.env, ...(t.env ?? {}) }, stderr: 'ignore' });
  }
  if (t.kind === 'sse') return new (v1 ? SSEv1 : SSEv2)(new URL(t.url), { requestInit });
  return new (v1 ? HTTPv1 : HTTPv2)(new URL(t.url), { requestInit });
}

async function connect() {
  const roots = { roots: [{ uri: spec.root, name: 'fidelity' }] };
  if (spec.client === 'v1') {
    const c = new ClientV1(info, { capabilities });
    c.setRequestHandler(ListRootsRequestSchema, async () => roots);
    c.setRequestHandler(ElicitRequestSchema, async (req) => answer(req.params));
    c.setNotificationHandler(LoggingMessageNotificationSchema, () => logCount++);
    await c.connect(transportFor(true));
    return c;
  }
  let mode = 'legacy';
  if (spec.client === 'v2-modern') mode = spec.modern ? { pin: MODERN } : 'auto';
  const c = new ClientV2(info, { capabilities, versionNegotiation: { mode } });
  c.setRequestHandler('roots/list', async () => roots);
  c.setRequestHandler('elicitation/create', async (req) => answer(req.params));
  c.setNotificationHandler('notifications/message', () => logCount++);
  await c.connect(transportFor(false));
  return c;
}

function answer(params) {
  if (params?.mode === 'url') return { action: 'accept' };
  return { action: 'accept', content: { name: 'fidelity' } };
}

// all follows nextCursor (v1 returns one page per call; v2 walks them itself without a cursor).
async function all(list, field) {
  const items = [];
  let cursor;
  for (let page = 0; page < 50; page++) {
    const res = await list(cursor === undefined ? undefined : { cursor });
    items.push(...(res[field] ?? []));
    cursor = res.nextCursor;
    if (!cursor) return items;
  }
  throw new Error(`${field}: more than 50 pages`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(c, op) {
  switch (op) {
    case 'initialize':
      return {
        instructions: c.getInstructions() ?? null,
        capabilities: c.getServerCapabilities() ?? null,
        protocolVersion: c.getNegotiatedProtocolVersion?.() ?? null,
      };
    case 'tools/list':
      return all((p) => c.listTools(p), 'tools');
    case 'prompts/list':
      return all((p) => c.listPrompts(p), 'prompts');
    case 'resources/list':
      return all((p) => c.listResources(p), 'resources');
    case 'resources/templates/list':
      return all((p) => c.listResourceTemplates(p), 'resourceTemplates');
    case 'tools/call':
      return c.callTool(spec.call);
    case 'prompts/get':
      return c.getPrompt(spec.prompt);
    case 'resources/read':
      return c.readResource({ uri: spec.resource });
    case 'roots':
      return c.callTool({ name: tool('get-roots-list'), arguments: {} });
    case 'logging': {
      const out = {};
      try {
        await c.setLoggingLevel('debug');
        out.setLevel = 'ok';
      } catch (err) {
        out.setLevel = `error ${err?.code ?? ''}`.trim();
      }
      const before = logCount;
      await c.callTool({ name: tool('toggle-simulated-logging'), arguments: {} });
      await sleep(LOG_WAIT_MS);
      out.received = logCount > before;
      await c.callTool({ name: tool('toggle-simulated-logging'), arguments: {} });
      return out;
    }
    case 'cancellation': {
      // Aborted after 300 ms; the operation itself lasts 1 s, and the run waits that out so a
      // call still running upstream cannot overlap whatever comes next on a shared upstream.
      const started = Date.now();
      const params = { name: tool('trigger-long-running-operation'), arguments: { duration: 1, steps: 2 } };
      const options = { signal: AbortSignal.timeout(300) };
      let out;
      try {
        // v1's callTool takes (params, resultSchema, options); v2's (params, options).
        await (spec.client === 'v1' ? c.callTool(params, undefined, options) : c.callTool(params, options));
        out = { outcome: 'completed' };
      } catch (err) {
        out = { outcome: 'aborted', prompt: Date.now() - started < 900 };
      }
      await sleep(Math.max(0, 1_300 - (Date.now() - started)));
      return out;
    }
    case 'elicitation/form':
      return c.callTool({ name: tool('trigger-elicitation-request'), arguments: {} });
    case 'elicitation/url':
      return c.callTool({
        name: tool('trigger-url-elicitation'),
        arguments: { url: 'https://example.com/fidelity', elicitationId: 'fidelity-elicitation' },
      });
    default:
      throw new Error(`unknown op ${op}`);
  }
}

// tool names the gateway prefixes are called with spec.prefix in front.
function tool(name) {
  return (spec.prefix ?? '') + name;
}

async function main() {
  const ops = {};
  let c;
  try {
    c = await connect();
  } catch (err) {
    ops.connect = { error: String(err?.message ?? err), code: err?.code ?? null };
    process.stdout.write(JSON.stringify({ ops }) + '\n');
    process.exit(0);
  }
  const ms = {};
  for (const op of spec.ops) {
    const started = Date.now();
    try {
      ops[op] = await run(c, op);
    } catch (err) {
      ops[op] = { error: String(err?.message ?? err), code: err?.code ?? null };
    }
    ms[op] = Date.now() - started;
  }
  process.stdout.write(JSON.stringify({ ops, ms }) + '\n');
  await Promise.race([c.close().catch(() => {}), sleep(2_000)]);
  process.exit(0);
}

main();
