/**
 * Benchmark: what the agent hook costs the agent per tool call (issue 15 item 3: a non-risky terminal
 * call may add at most 1.5x a bare `node -e 0`). Side by side, interleaved round by round so load on a
 * shared machine hits every row alike, each a real process started the way Hermes starts it (argv,
 * JSON on stdin, stdout read to the end):
 *   - `node -e 0`: a bare Node start, the floor
 *   - out/hook.js with a non-risky terminal call (`ls -la && git status`): what `hook install` wires up
 *   - out/sidecar.js hook run with the same call: the installed bin (its launcher answers it without the
 *     full CLI; bench/startup.bench.ts has the other start-up paths)
 *   - out/hook.js with a risky call (`pip install requests`) on a dir target of 2,000 small files: a
 *     pre restore point (the post of the pair is not taken; each round is a new call id)
 * Builds out/ with esbuild first (as esbuild.mjs, bench/lib.ts buildAgentkeep). Median and p90 of BENCH_HOOK_ROUNDS rounds (default 30).
 * Run: npm run bench:hook   (= npx tsx bench/hook.bench.ts); BENCH_MD=path appends the table there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildAgentkeep, median } from './lib';

const ROOT = path.resolve(__dirname, '..');
const ROUNDS = Number(process.env.BENCH_HOOK_ROUNDS ?? 30);

/** Wall time of one process run, in ms. */
function run(argv: string[], stdin = ''): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { input: stdin, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function payload(command: string, id: string): string {
  return JSON.stringify({
    hook_event_name: 'pre_tool_call',
    tool_name: 'terminal',
    tool_input: { command },
    session_id: 'sess_bench',
    cwd: '/tmp',
    profile: 'default',
    extra: { task_id: 't', tool_call_id: id, turn_id: 'u', api_request_id: 'r', middleware_trace: [] },
  });
}

async function main(): Promise<void> {
  await buildAgentkeep(ROOT);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-hook-bench-'));
  const tree = path.join(tmp, 'agent');
  const state = path.join(tmp, 'state');
  for (let i = 0; i < 2000; i++) {
    const d = path.join(tree, `d${i % 40}`);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, `f${i}.txt`), `file ${i}\n`.repeat(20));
  }
  const node = process.execPath;
  const hook = [
    node,
    path.join(ROOT, 'out/hook.js'),
    'hook',
    'run',
    'hermes',
    '--agent',
    'bench',
    '--target',
    `dir:${tree}`,
    '--state-dir',
    state,
  ];
  const cli = [
    node,
    path.join(ROOT, 'out/sidecar.js'),
    '--state-dir',
    state,
    'hook',
    'run',
    'hermes',
    '--agent',
    'bench',
    '--target',
    `dir:${tree}`,
  ];
  const safe = payload('ls -la && git status', 'call_safe');
  const rows: Record<string, number[]> = {
    'node -e 0': [],
    'out/hook.js, non-risky terminal call': [],
    'out/sidecar.js hook run, same call': [],
    'out/hook.js, risky call (pre restore point, dir, 2,000 files)': [],
  };
  // warm the page cache once
  run([node, '-e', '0']);
  run(hook, safe);
  run(cli, safe);
  for (let r = 0; r < ROUNDS; r++) {
    rows['node -e 0'].push(run([node, '-e', '0']));
    rows['out/hook.js, non-risky terminal call'].push(run(hook, safe));
    rows['out/sidecar.js hook run, same call'].push(run(cli, safe));
    if (r % 3 === 0)
      rows['out/hook.js, risky call (pre restore point, dir, 2,000 files)'].push(
        run(hook, payload('pip install requests', `call_${r}`)),
      );
  }
  const base = median(rows['node -e 0']);
  const p90 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
  const lines = [
    `| process (${ROUNDS} rounds, interleaved) | median | p90 | × node -e 0 |`,
    '|---|---:|---:|---:|',
    ...Object.entries(rows).map(
      ([k, xs]) =>
        `| ${k} | ${median(xs).toFixed(0)} ms | ${p90(xs).toFixed(0)} ms | ${(median(xs) / base).toFixed(2)}× |`,
    ),
  ];
  const ratio = median(rows['out/hook.js, non-risky terminal call']) / base;
  const verdict = `Non-risky call: ${ratio.toFixed(2)}× node -e 0 (budget 1.5×): ${ratio <= 1.5 ? 'within' : 'OVER'} budget. Load average: ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.cpus().length} CPUs; Node ${process.version}.`;
  const out = `${lines.join('\n')}\n\n${verdict}\n`;
  process.stdout.write(out);
  if (process.env.BENCH_MD) fs.appendFileSync(process.env.BENCH_MD, `\n${out}`);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
