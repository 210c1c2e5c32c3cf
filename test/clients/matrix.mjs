// End-to-end client matrix for mcpgw, driven by test/e2e/tsclient_test.go.
//
// usage: node matrix.mjs <mode> <url> <key>
//
//   legacy  TS SDK v2 client (@modelcontextprotocol/client), versionNegotiation 'legacy' (initialize)
//   auto    TS SDK v2 client, versionNegotiation 'auto' (server/discover probe, legacy fallback)
//   modern  TS SDK v2 client, pinned to 2026-07-28 (no fallback)
//   v1-sse  v1 SDK (@modelcontextprotocol/sdk) SSEClientTransport; <url> is the gateway's /mcp/sse
//   v1-http v1 SDK StreamableHTTPClientTransport; <url> is the gateway's /mcp
//
// It connects with `Authorization: Bearer <key>`, lists tools, calls one tool on each upstream of
// the test config (fullConfig in test/e2e/gateway_test.go), lists prompts and resources, gets a
// prompt, reads a resource and ends a legacy HTTP session with DELETE, then prints ONE JSON line
// on stdout:
//
//   {"mode","era","protocol_era","tools","calls":{name:text},"prompts","resources",
//    "prompt_messages","read_contents"}
//
// and exits 0. On any failure it prints {"mode","step","error",...} and exits 1; after 60 s it
// prints a timeout error and exits 2. With MATRIX_WIRE=1 every HTTP exchange (requests and the
// response bodies as they stream in) is logged to stderr, to show what the client sent and what
// the gateway answered.
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPTransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport as SSETransportV1 } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport as HTTPTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const MODERN = '2026-07-28';
const TIMEOUT_MS = 60_000;
const MODES = ['legacy', 'auto', 'modern', 'v1-sse', 'v1-http'];

const CALLS = [
  ['modern_fx-test_simple_text', {}],
  ['legacy_fx-test_simple_text', {}],
  ['stdio_fx-test_simple_text', {}],
  ['everything-echo', { message: 'hi' }],
];
const PROMPT = ['modern_fx-test_prompt_with_arguments', { arg1: 'a', arg2: 'b' }];
const RESOURCE = 'test://static-text';

const [mode, url, key] = process.argv.slice(2);
let step = 'start';

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fail(err, code) {
  const out = { mode, step, error: String(err?.message ?? err) };
  if (err?.code !== undefined) out.code = err.code;
  if (err?.data !== undefined) out.data = err.data;
  if (err?.name && err.name !== 'Error') out.name = err.name;
  emit(out);
  process.exit(code);
}

setTimeout(() => fail(new Error(`timed out after ${TIMEOUT_MS / 1000}s`), 2), TIMEOUT_MS).unref();
process.on('unhandledRejection', (err) => fail(err, 1));

// wireFetch logs each exchange to stderr when MATRIX_WIRE=1; the response body is teed so the
// caller still reads it while the log shows it (SSE streams chunk by chunk, as they arrive).
let seq = 0;
const wire = process.env.MATRIX_WIRE === '1';
async function wireFetch(input, init) {
  const n = ++seq;
  const headers = new Headers(init?.headers);
  const shown = [...headers].filter(([k]) => k.startsWith('mcp') || k === 'content-type' || k === 'accept' || k === 'last-event-id');
  const reqURL = typeof input === 'string' ? input : input.url ?? String(input);
  process.stderr.write(`>> #${n} ${init?.method ?? 'GET'} ${reqURL} ${shown.map((p) => p.join('=')).join(' ')} ${init?.body ?? ''}\n`);
  let res;
  try {
    res = await fetch(input, init);
  } catch (err) {
    process.stderr.write(`<< #${n} fetch error: ${err?.message ?? err}\n`);
    throw err;
  }
  const rh = [...res.headers].filter(([k]) => k.startsWith('mcp') || k === 'content-type' || k === 'www-authenticate');
  process.stderr.write(`<< #${n} ${res.status} ${rh.map((p) => p.join('=')).join(' ')}\n`);
  if (!res.body) return res;
  const [mine, theirs] = res.body.tee();
  (async () => {
    const dec = new TextDecoder();
    try {
      for await (const chunk of mine) process.stderr.write(`<< #${n} body: ${dec.decode(chunk, { stream: true }).slice(0, 4000)}\n`);
    } catch {
      // the client aborted the stream
    }
  })();
  return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// all follows nextCursor so a paginated aggregate is counted in full.
async function all(list, field) {
  const items = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const res = await list(cursor === undefined ? undefined : { cursor });
    items.push(...(res[field] ?? []));
    cursor = res.nextCursor;
    if (!cursor) return items;
  }
  throw new Error(`${field}: more than 100 pages`);
}

async function main() {
  if (!MODES.includes(mode) || !url || !key) {
    throw new Error(`usage: node matrix.mjs <${MODES.join('|')}> <url> <key>`);
  }
  const requestInit = { headers: { Authorization: `Bearer ${key}` } };
  const fetchOpt = wire ? { fetch: wireFetch } : {};
  const info = { name: 'mcpgw-matrix', version: '0.0.1' };

  let client;
  let transport;
  let era;
  let protocolEra;
  step = 'connect';
  if (mode.startsWith('v1-')) {
    client = new ClientV1(info);
    const Transport = mode === 'v1-sse' ? SSETransportV1 : HTTPTransportV1;
    transport = new Transport(new URL(url), { requestInit, ...fetchOpt });
    // The v1 client hands the negotiated version to the transport once initialize is done.
    const set = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => {
      era = v;
      set?.(v);
    };
    await client.connect(transport);
    protocolEra = 'legacy';
  } else {
    const negotiation = mode === 'modern' ? { pin: MODERN } : mode;
    client = new ClientV2(info, { versionNegotiation: { mode: negotiation } });
    transport = new HTTPTransportV2(new URL(url), { requestInit, ...fetchOpt });
    await client.connect(transport);
    era = client.getNegotiatedProtocolVersion();
    protocolEra = client.getProtocolEra();
  }

  step = 'tools/list';
  const tools = await all((p) => client.listTools(p), 'tools');

  const calls = {};
  for (const [name, args] of CALLS) {
    step = `tools/call ${name}`;
    const res = await client.callTool({ name, arguments: args });
    if (res.isError) throw new Error(`tool error: ${textOf(res) || JSON.stringify(res)}`);
    calls[name] = textOf(res);
  }

  step = 'prompts/list';
  const prompts = await all((p) => client.listPrompts(p), 'prompts');
  step = 'resources/list';
  const resources = await all((p) => client.listResources(p), 'resources');

  step = `prompts/get ${PROMPT[0]}`;
  const prompt = await client.getPrompt({ name: PROMPT[0], arguments: PROMPT[1] });
  step = `resources/read ${RESOURCE}`;
  const read = await client.readResource({ uri: RESOURCE });

  // A legacy streamable HTTP session is ended explicitly (DELETE), as a well-behaved client does.
  if (transport.sessionId) {
    step = 'DELETE session';
    await transport.terminateSession();
  }
  step = 'close';
  await client.close();

  emit({
    mode,
    era,
    protocol_era: protocolEra,
    tools: tools.length,
    calls,
    prompts: prompts.length,
    resources: resources.length,
    prompt_messages: prompt.messages?.length ?? 0,
    read_contents: read.contents?.length ?? 0,
  });
  process.exit(0);
}

main().catch((err) => fail(err, 1));
