// MCP authorization end to end with the TypeScript SDK v1 client's OAuth support
// (@modelcontextprotocol/sdk client/auth.js), driven by test/e2e/oidc_test.go.
//
// usage: node oauth.mjs <gateway MCP URL> <username> <password> <redirect URI> <client id> <client secret>
//
// The client connects without a token; the gateway answers 401 with
// WWW-Authenticate: Bearer resource_metadata=...; the SDK reads the protected-resource metadata,
// then the authorization server's metadata (the OpenID provider it names), and sends the user to
// the authorization endpoint. redirectToAuthorization plays the browser with plain HTTP: it
// follows the provider's redirects to its login form, posts the username and password, and
// reads the code from the redirect back to <redirect URI> (nothing listens there). The SDK then
// exchanges the code (PKCE) and the client reconnects with the token, lists tools and calls one.
//
// The provider used in the tests (zitadel/oidc's example OP) issues opaque access tokens and
// JWT ID tokens; the gateway verifies JWTs only, so saveTokens keeps the ID token as the bearer.
//
// It prints ONE JSON line: {"requests":[...],"tools":[...],"call":"...","era":"..."} and exits 0,
// or {"step","error"} and exits 1. requests lists "METHOD URL STATUS" for every fetch the SDK made.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, username, password, redirectUri, clientId, clientSecret] = process.argv.slice(2);
const requests = [];
let step = 'start';

const realFetch = globalThis.fetch;
const recordingFetch = async (input, init) => {
  const res = await realFetch(input, init);
  const u = typeof input === 'string' ? input : input.url ?? String(input);
  requests.push(`${init?.method ?? 'GET'} ${u} ${res.status}`);
  return res;
};

// signIn plays the browser: authorization URL → login form → callback → redirect URI.
async function signIn(authorizationUrl) {
  let res = await realFetch(authorizationUrl, { redirect: 'manual' });
  let next = new URL(res.headers.get('location'), authorizationUrl);
  const id = next.searchParams.get('authRequestID');
  const form = new URLSearchParams({ username, password, id });
  res = await realFetch(next, { method: 'POST', body: form, redirect: 'manual' });
  next = new URL(res.headers.get('location'), next);
  for (let i = 0; i < 5 && !next.href.startsWith(redirectUri); i++) {
    res = await realFetch(next, { redirect: 'manual' });
    if (res.status < 300 || res.status >= 400) throw new Error(`sign-in stopped at ${next.pathname} with ${res.status}`);
    next = new URL(res.headers.get('location'), next);
  }
  const code = next.searchParams.get('code');
  if (!code) throw new Error('no code in the redirect back');
  return code;
}

class Provider {
  constructor() { this.t = undefined; this.v = undefined; this.code = undefined; this.info = { client_id: clientId, client_secret: clientSecret }; }
  get redirectUrl() { return redirectUri; }
  get clientMetadata() { return { redirect_uris: [redirectUri], client_name: 'mcpgw oauth test', grant_types: ['authorization_code'], response_types: ['code'] }; }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.t; }
  saveTokens(t) { this.t = { ...t, access_token: t.id_token ?? t.access_token }; }
  async redirectToAuthorization(u) { step = 'sign-in'; this.code = await signIn(u); }
  saveCodeVerifier(v) { this.v = v; }
  codeVerifier() { return this.v; }
}

async function main() {
  const provider = new Provider();
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });
  step = 'connect without a token';
  try {
    await new Client({ name: 'oauth-test', version: '1.0.0' }).connect(first);
    throw new Error('connected without a token');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  step = 'finishAuth';
  await first.finishAuth(provider.code);
  step = 'reconnect with the token';
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transport);
  step = 'tools/list';
  const tools = (await client.listTools()).tools.map((t) => t.name);
  step = 'tools/call';
  const res = await client.callTool({ name: tools.find((n) => n.endsWith('test_simple_text')), arguments: {} });
  const call = res.content?.[0]?.text ?? '';
  await transport.terminateSession().catch(() => {});
  await client.close();
  console.log(JSON.stringify({ requests, tools, call, era: transport.protocolVersion ?? '' }));
}

const timer = setTimeout(() => { console.log(JSON.stringify({ step, error: 'timeout', requests })); process.exit(2); }, 60_000);
main().then(() => { clearTimeout(timer); process.exit(0); }, (e) => {
  console.log(JSON.stringify({ step, error: String(e?.stack ?? e), requests }));
  process.exit(1);
});
