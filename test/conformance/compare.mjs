// Compares a conformance run made directly against a known-good peer with the same run made
// through mcpgw, per scenario and per check (scripts/conformance.sh).
//
// usage: node compare.mjs --leg server|client --revision R --list LIST.txt
//                         --direct DIR --gateway DIR [--known-gaps FILE] [--json OUT.json]
//
//   LIST.txt    output of `conformance list --requirements R`; the server (or client) scenarios
//               named before "Run and reported, but never scored" are the scored ones.
//   DIR         an -o directory of the suite: one sub-directory per scenario, named
//               [server-]<scenario>-<timestamp> (client auth scenarios sit under auth/), each
//               holding checks.json (array of {id, name, status, errorMessage, ...}).
//   FILE        known gaps, one per line: `- <scenario>:<check-id>  # cause`.
//
// A check "fails only through the gateway" when the gateway run has more FAILURE checks with that
// (id, name) than the direct run (ids repeat within a scenario, names tell them apart). A scored
// scenario that ran directly but has no result through the gateway counts as the failing check
// "(no result)". A check that succeeds directly but is WARNING/INFO/SKIPPED/absent through the
// gateway is shown in the table, not gated.
//
// Prints a table and exits 1 when a scored scenario has a gateway-only failure that known-gaps
// does not list, or when a scored scenario has no result from the direct run (INCOMPLETE: the
// suite failed or timed out); else 0.
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) throw new Error(`unexpected argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ['leg', 'revision', 'list', 'direct', 'gateway']) {
    if (!out[k]) throw new Error(`--${k} is required`);
  }
  return out;
}

// scoredScenarios reads `conformance list --requirements R` output: the scenarios listed under
// "Server scenarios" (leg server) or "Client scenarios" (leg client), before "never scored".
export function scoredScenarios(text, leg) {
  const scored = new Set();
  let section = '';
  for (const line of text.split('\n')) {
    if (/never scored/i.test(line)) break;
    if (/^Server scenarios/i.test(line)) section = 'server';
    else if (/^Client scenarios/i.test(line)) section = 'client';
    const m = /^\s+-\s+(\S+)\s*$/.exec(line);
    if (m && section === leg) scored.add(m[1]);
  }
  return scored;
}

// knownGaps reads `- scenario:check-id  # cause` lines.
export function knownGaps(text) {
  const gaps = new Map();
  for (const raw of text.split('\n')) {
    const m = /^\s*-\s*([^#\s]+)\s*(?:#\s*(.*))?$/.exec(raw);
    if (!m) continue;
    const entry = m[1].replace(/^["']|["']$/g, '');
    const at = entry.lastIndexOf(':');
    if (at <= 0) continue;
    gaps.set(entry, (m[2] ?? '').trim());
  }
  return gaps;
}

const STAMP = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

// loadRun maps scenario name -> checks array for one -o directory.
export function loadRun(dir, leg) {
  const runs = new Map();
  if (!dir || !existsSync(dir)) return runs;
  const walk = (d) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (!statSync(p).isDirectory()) continue;
      if (existsSync(join(p, 'checks.json'))) {
        let name = relative(dir, p).split(sep).join('/').replace(STAMP, '');
        if (leg === 'server') name = name.replace(/^server-/, '');
        let checks;
        try {
          checks = JSON.parse(readFileSync(join(p, 'checks.json'), 'utf8'));
        } catch (err) {
          checks = [{ id: '(unreadable checks.json)', name: '', status: 'FAILURE', errorMessage: String(err) }];
        }
        const prev = runs.get(name);
        if (!prev || prev.dir < p) runs.set(name, { dir: p, checks });
      } else {
        walk(p);
      }
    }
  };
  walk(dir);
  return runs;
}

const short = (s, n = 160) => {
  s = String(s ?? '').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
};

// message is a failing check's errorMessage, or what its details say when it has none.
function message(c) {
  if (c.errorMessage) return c.errorMessage;
  const d = c.details;
  if (d && typeof d === 'object') return d.message ?? d.error ?? JSON.stringify(d);
  return c.description ?? '';
}

function tally(checks) {
  const pass = checks.filter((c) => c.status === 'SUCCESS').length;
  const fail = checks.filter((c) => c.status === 'FAILURE').length;
  return { pass, fail, label: fail ? `FAIL ${pass}/${pass + fail}` : `pass ${pass}/${pass + fail}` };
}

function failureCounts(checks) {
  const m = new Map();
  for (const c of checks) {
    if (c.status !== 'FAILURE') continue;
    const k = `${c.id}\u0000${c.name ?? ''}`;
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(c);
  }
  return m;
}

export function compare({ leg, revision, scored, direct, gateway, gaps }) {
  const names = [...new Set([...scored, ...direct.keys(), ...gateway.keys()])].sort((a, b) => {
    const sa = scored.has(a) ? 0 : 1;
    const sb = scored.has(b) ? 0 : 1;
    return sa - sb || a.localeCompare(b);
  });
  const rows = [];
  for (const name of names) {
    const d = direct.get(name);
    const g = gateway.get(name);
    const row = {
      scenario: name,
      scored: scored.has(name),
      direct: d ? tally(d.checks) : null,
      gateway: g ? tally(g.checks) : null,
      gatewayOnly: [],
      degraded: [],
      directDir: d?.dir,
      gatewayDir: g?.dir,
    };
    if (d && !g) {
      row.gatewayOnly.push({ id: '(no result)', name: '', errorMessage: 'scenario produced no results through the gateway' });
    } else if (g) {
      const df = failureCounts(d?.checks ?? []);
      for (const [k, list] of failureCounts(g.checks)) {
        const extra = list.length - (df.get(k)?.length ?? 0);
        for (const c of list.slice(list.length - Math.max(extra, 0))) {
          row.gatewayOnly.push({ id: c.id, name: c.name ?? '', errorMessage: message(c), details: c.details });
        }
      }
      if (d) {
        // SUCCESS directly but neither SUCCESS nor FAILURE through the gateway (WARNING, INFO,
        // SKIPPED or absent): informational, not gated.
        const gs = new Map();
        for (const c of g.checks) {
          const k = `${c.id}\u0000${c.name ?? ''}`;
          if (!gs.has(k)) gs.set(k, new Set());
          gs.get(k).add(c.status);
        }
        for (const c of d.checks) {
          if (c.status !== 'SUCCESS') continue;
          const st = gs.get(`${c.id}\u0000${c.name ?? ''}`);
          if (!st) row.degraded.push(`${c.id}=absent`);
          else if (!st.has('SUCCESS') && !st.has('FAILURE')) row.degraded.push(`${c.id}=${[...st].join('/')}`);
        }
        row.degraded = [...new Set(row.degraded)];
      }
    }
    for (const f of row.gatewayOnly) {
      const key = `${name}:${f.id}`;
      f.knownGap = gaps.has(key);
      f.cause = gaps.get(key);
    }
    rows.push(row);
  }
  const regressions = rows.filter((r) => r.scored).flatMap((r) => r.gatewayOnly.filter((f) => !f.knownGap).map((f) => ({ scenario: r.scenario, ...f })));
  const known = rows.filter((r) => r.scored).flatMap((r) => r.gatewayOnly.filter((f) => f.knownGap).map((f) => ({ scenario: r.scenario, ...f })));
  // scored scenarios the direct run has no result for: the comparison is incomplete
  const incomplete = rows.filter((r) => r.scored && !r.direct).map((r) => r.scenario);
  const unscoredOnly = rows.filter((r) => !r.scored).flatMap((r) => r.gatewayOnly.map((f) => ({ scenario: r.scenario, ...f })));
  return { leg, revision, rows, regressions, known, unscoredOnly, incomplete };
}

function table(rows) {
  const head = ['scenario', 'direct', 'gateway', 'checks failing only through the gateway'];
  const body = rows.map((r) => [
    r.scenario + (r.scored ? '' : ' (not scored)'),
    r.direct?.label ?? '(no result)',
    r.gateway?.label ?? '(no result)',
    r.gatewayOnly.map((f) => `${f.id}${f.knownGap ? ' [known gap]' : ''}: ${short(f.errorMessage, 90)}`).join('; ') +
      (r.degraded.length ? `${r.gatewayOnly.length ? '; ' : ''}(success directly, not through the gateway: ${r.degraded.join(', ')})` : ''),
  ]);
  const w = head.slice(0, 3).map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 3 ? c.padEnd(w[i]) : c)).join(' | ').trimEnd();
  return [line(head), w.map((n) => '-'.repeat(n)).concat('-'.repeat(40)).join('-|-'), ...body.map(line)].join('\n');
}

export function render(res) {
  const out = [];
  out.push(`== ${res.leg} leg, --requirements ${res.revision} ==`);
  out.push(table(res.rows));
  const scoredRows = res.rows.filter((r) => r.scored);
  const dFail = scoredRows.filter((r) => r.direct && r.direct.fail).length;
  const gFail = scoredRows.filter((r) => !r.gateway || r.gateway.fail).length;
  out.push(`scored scenarios: ${scoredRows.length}; failing directly: ${dFail}; failing through the gateway: ${gFail}`);
  if (res.regressions.length) {
    out.push(`REGRESSIONS (scored checks failing only through the gateway, not in known-gaps): ${res.regressions.length}`);
    for (const f of res.regressions) out.push(`  - ${f.scenario}:${f.id}  ${f.name ? `[${f.name}] ` : ''}${short(f.errorMessage, 300)}`);
  } else {
    out.push('regressions: none');
  }
  if (res.incomplete.length) {
    out.push(`INCOMPLETE: ${res.incomplete.length} scored scenario(s) have no result from the direct run (suite failed or timed out): ${res.incomplete.join(', ')}`);
  }
  if (res.known.length) {
    out.push(`known gaps (listed in known-gaps.yml, not counted): ${res.known.length}`);
    for (const f of res.known) out.push(`  - ${f.scenario}:${f.id}  # ${f.cause || '(no cause given)'} — ${short(f.errorMessage, 200)}`);
  }
  if (res.unscoredOnly.length) {
    out.push(`not scored, failing only through the gateway (informational): ${res.unscoredOnly.length}`);
    for (const f of res.unscoredOnly) out.push(`  - ${f.scenario}:${f.id}  ${short(f.errorMessage, 200)}`);
  }
  return out.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const a = parseArgs(process.argv.slice(2));
  const scored = scoredScenarios(readFileSync(a.list, 'utf8'), a.leg);
  if (scored.size === 0) {
    console.error(`compare: no scored scenarios found in ${a.list}`);
    process.exit(2);
  }
  const gaps = a['known-gaps'] && existsSync(a['known-gaps']) ? knownGaps(readFileSync(a['known-gaps'], 'utf8')) : new Map();
  const res = compare({
    leg: a.leg,
    revision: a.revision,
    scored,
    direct: loadRun(a.direct, a.leg),
    gateway: loadRun(a.gateway, a.leg),
    gaps,
  });
  console.log(render(res));
  if (a.json) writeFileSync(a.json, JSON.stringify(res, null, 1));
  process.exit(res.regressions.length || res.incomplete.length ? 1 : 0);
}
