/**
 * Benchmark: the memory lint (sidecar/memory/lint lintEntries) on 10,000 entries, side by side with
 * the naive all-pairs comparison a user would write (tokenise every entry, then the word-set
 * Jaccard of every pair, n·(n-1)/2 comparisons, flag pairs >= 0.5). The naive scan does less work
 * per pair (no contradiction or near-duplicate classification, no other rules); the ratio is
 * lint time / naive time.
 *
 * Entries: generated from 40 templates (people, hosts, ports, versions, preferences, runbooks) with
 * random subjects and values, plus 2% exact copies, 2% reworded copies and 1% value swaps, in 4
 * stores of 2,500 entries (so cross-store pairs are compared too).
 * Run: npm run bench:memory-lint   (= npx tsx bench/memory-lint.bench.ts)
 * Env: BENCH_ENTRIES (10000), BENCH_ROUNDS (5), BENCH_NAIVE=0 skips the naive scan,
 * BENCH_SHARED=N (e.g. 100000): instead, the shared-vocabulary cases of issue 12 — N entries that
 * share most of their words (one wording, a number each; and the template mix above at N), one round
 * each, wall and CPU time, peak RSS, and the findings (one group finding, never silent).
 */
import * as os from 'node:os';
import { lintEntries, type LintInput } from '../sidecar/memory/lint';
import { tokens } from '../sidecar/memory/lint/text';
import { rng } from './lib';

const N = Number(process.env.BENCH_ENTRIES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const NAMES = ['Dana', 'Alice', 'Bob', 'Marta', 'Kenji', 'Priya', 'Omar', 'Lena', 'Tom', 'Ines', 'Yuki', 'Sam'];
const THINGS = [
  'billing',
  'search',
  'auth',
  'docs',
  'api',
  'worker',
  'cache',
  'gateway',
  'reports',
  'mailer',
  'ingest',
  'backup',
];
const TOOLS = ['pnpm', 'npm', 'yarn', 'docker', 'podman', 'node', 'python', 'go', 'rust', 'terraform'];
const TEMPLATES: Array<(p: () => string, n: () => number) => string> = [
  (p, n) => `The ${p()} service listens on port ${8000 + n()}`,
  (p, n) => `${p()} owns the ${p()} service and is on call every ${['Monday', 'Tuesday', 'Friday'][n() % 3]}`,
  (p, n) => `Staging host for ${p()} is 10.0.${n() % 255}.${n() % 255}`,
  (p, n) => `Project ${p()} targets Node ${16 + (n() % 6)} and uses ${p()} for builds`,
  (p, n) => `Runbook ${n()}: restart the ${p()} container, then check the ${p()} logs in /var/log/${p()}`,
  (p) => `User prefers ${p()} answers with code first when asking about ${p()}`,
  (p, n) => `Incident ${n()}: the ${p()} API returned 502 after a deploy of ${p()}`,
  (p) => `${p()} does not use Docker for the ${p()} pipeline`,
  (p, n) => `Weekly sync with ${p()} about ${p()} is at ${9 + (n() % 8)}:30`,
  (p, n) => `Deploy key for ${p()} lives in ~/.ssh/${p()}_${n()}_ed25519`,
];

export function generate(n: number): LintInput {
  const r = rng(42);
  // Made-up project/host/person names (2,000) next to the common ones, so that subjects repeat the way
  // they do in a real store (a few often, most rarely).
  const syl = ['ka', 'lo', 'mi', 'ren', 'to', 'vas', 'qui', 'del', 'on', 'bri', 'sta', 'nu', 'fer', 'gal', 'ix', 'por'];
  const made = Array.from({ length: 2000 }, () =>
    Array.from({ length: 3 }, () => syl[Math.floor(r() * syl.length)]).join(''),
  );
  const pool = [...NAMES, ...THINGS, ...TOOLS];
  const pick = (): string => (r() < 0.3 ? pool[Math.floor(r() * pool.length)] : made[Math.floor(r() * made.length)]);
  const num = (): number => Math.floor(r() * 1000);
  const texts: string[] = [];
  while (texts.length < n) {
    const x = r();
    if (x < 0.02 && texts.length) texts.push(texts[Math.floor(r() * texts.length)]);
    else if (x < 0.04 && texts.length) texts.push(`The ${texts[Math.floor(r() * texts.length)].toLowerCase()}.`);
    else if (x < 0.05 && texts.length)
      texts.push(texts[Math.floor(r() * texts.length)].replace(/\d+/, (d) => String(Number(d) + 1)));
    else texts.push(TEMPLATES[Math.floor(r() * TEMPLATES.length)](pick, num));
  }
  const per = Math.ceil(n / 4);
  return {
    stores: [0, 1, 2, 3].map((s) => ({
      store: `hermes:/h${s}`,
      files: [
        {
          kind: 'agent-zero-main',
          file: `/h${s}/index.pkl`,
          entries: texts.slice(s * per, (s + 1) * per).map((text, i) => ({ id: `s${s}e${i}`, text })),
        },
      ],
    })),
  };
}

function naive(input: LintInput): number {
  const sets = input.stores.flatMap((s) =>
    s.files.flatMap((f) => f.entries.map((e) => new Set(tokens(e.text).map((t) => t.t)))),
  );
  let flagged = 0;
  for (let i = 0; i < sets.length; i++) {
    const a = sets[i];
    for (let j = i + 1; j < sets.length; j++) {
      const b = sets[j];
      let inter = 0;
      for (const x of a) if (b.has(x)) inter++;
      if (inter / (a.size + b.size - inter) >= 0.5) flagged++;
    }
  }
  return flagged;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function main(): void {
  const input = generate(N);
  const lintTimes: number[] = [];
  const lintCpu: number[] = [];
  let findings = 0;
  let byKind: Record<string, number> = {};
  for (let i = 0; i < ROUNDS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const f = lintEntries(input);
    lintTimes.push(performance.now() - t0);
    const c1 = process.cpuUsage(c0);
    lintCpu.push((c1.user + c1.system) / 1000);
    findings = f.length;
    byKind = {};
    for (const x of f) byKind[x.kind] = (byKind[x.kind] ?? 0) + 1;
  }
  const lint = median(lintTimes);
  const lintC = median(lintCpu);
  process.stdout.write(`load average before: ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs\n`);
  process.stdout.write(
    `entries: ${N}; lintEntries median of ${ROUNDS}: wall ${lint.toFixed(0)} ms (rounds ${lintTimes.map((t) => t.toFixed(0)).join(', ')}), CPU ${lintC.toFixed(0)} ms (rounds ${lintCpu.map((t) => t.toFixed(0)).join(', ')}); findings ${findings} ${JSON.stringify(byKind)}\n`,
  );
  if (process.env.BENCH_NAIVE === '0') return;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const flagged = naive(input);
  const nv = performance.now() - t0;
  const c1 = process.cpuUsage(c0);
  const nvC = (c1.user + c1.system) / 1000;
  process.stdout.write(
    `naive all-pairs Jaccard (${((N * (N - 1)) / 2).toLocaleString('en-US')} pairs, one run): wall ${nv.toFixed(0)} ms, CPU ${nvC.toFixed(0)} ms; pairs >= 0.5: ${flagged}\n`,
  );
  process.stdout.write(`load average after: ${os.loadavg()[0].toFixed(1)}\n`);
  process.stdout.write(
    `\n| ${N.toLocaleString('en-US')} entries | AgentKeep lint (all rules) | naive all-pairs Jaccard | ratio |\n|---|---:|---:|---:|\n| wall | ${lint.toFixed(0)} ms | ${nv.toFixed(0)} ms | ${(lint / nv).toFixed(3)}× |\n| CPU | ${lintC.toFixed(0)} ms | ${nvC.toFixed(0)} ms | ${(lintC / nvC).toFixed(3)}× |\n`,
  );
}

/** Issue 12: N entries that share most of their words lint in linear time and memory, and say so. */
function shared(n: number): void {
  const cases: Array<[string, LintInput]> = [
    [
      `${n.toLocaleString('en-US')} copies of one wording, a number each`,
      {
        stores: [
          {
            store: 'hermes:/h',
            files: [
              {
                kind: 'agent-zero-main',
                file: '/h/index.pkl',
                entries: Array.from({ length: n }, (_, i) => ({
                  id: `e${i}`,
                  text: `User prefers dark mode in editor number ${i}`,
                })),
              },
            ],
          },
        ],
      },
    ],
    [`${n.toLocaleString('en-US')} entries of the template mix`, generate(n)],
  ];
  process.stdout.write(`load average before: ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs\n`);
  for (const [name, input] of cases) {
    if (global.gc) global.gc();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const f = lintEntries(input);
    const wall = performance.now() - t0;
    const c1 = process.cpuUsage(c0);
    const byKind: Record<string, number> = {};
    for (const x of f) byKind[x.kind] = (byKind[x.kind] ?? 0) + 1;
    const biggest = f.reduce((m, x) => Math.max(m, x.entries.length), 0);
    process.stdout.write(
      `${name}: wall ${wall.toFixed(0)} ms, CPU ${((c1.user + c1.system) / 1000).toFixed(0)} ms, RSS now ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB, peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; findings ${JSON.stringify(byKind)}, largest finding ${biggest} entries\n`,
    );
    const note = f.find((x) => x.kind === 'store' && x.message.startsWith('Lint note'));
    if (note) process.stdout.write(`  ${note.message}\n`);
  }
  process.stdout.write(`load average after: ${os.loadavg()[0].toFixed(1)}\n`);
}

if (require.main === module) {
  if (process.env.BENCH_SHARED) shared(Number(process.env.BENCH_SHARED));
  else main();
}
