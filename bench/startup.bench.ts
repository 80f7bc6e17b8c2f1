/**
 * Benchmark: start-up of the installed `agentkeep` program (out/sidecar.js) against a bare `node -e 0`
 * (issue 14: `agentkeep --version` and the hooks' path for a non-risky call within 1.5x of it). Every
 * row is a real process, cold (a new Node each time), started without a shell; the rows are
 * interleaved round by round (the order rotates every round) so load on a shared machine hits every
 * row alike:
 *   - node -e 0                                   the floor
 *   - agentkeep --version
 *   - agentkeep hook run hermes, non-risky terminal call (`ls -la && git status` as JSON on stdin)
 *   - agentkeep hook run agent-zero, non-risky code_execution_tool call (runtime terminal)
 *   - agentkeep hook run apt --dpkg pre-invoke     (its common path: sweep + this apt command's record)
 *   - agentkeep hook run apt --dpkg post-invoke    (no pre restore point to pair with: nothing to do)
 *   - agentkeep --help, agentkeep restore-point list   (the full CLI, out/cli.js, for comparison; not goals)
 * With BENCH_BEFORE=DIR (a checkout of another commit, built: `node esbuild.mjs` there) the same
 * agentkeep rows run from DIR/out/sidecar.js too, in the same rounds, for a before/after table.
 * Each row checks its result (exit 0; the version printed; nothing on stdout from a hook), so a fast
 * but wrong path cannot pass.
 *
 * Figures: median and p90 of the wall time; CPU = user + system time of the child as the kernel counts
 * it (/proc/self/stat cutime + cstime around each run; clock ticks, so the mean over all rounds).
 * Run: npm run bench:startup   (= npx tsx bench/startup.bench.ts). Env: BENCH_STARTUP_ROUNDS (40),
 * BENCH_BEFORE=DIR, BENCH_MD=file appends the table. Builds out/ first (bench/lib.ts buildAgentkeep).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildAgentkeep, median } from './lib';

const ROOT = path.resolve(__dirname, '..');
const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS ?? 40);
const BEFORE = process.env.BENCH_BEFORE ? path.resolve(process.env.BENCH_BEFORE) : undefined;
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Clock ticks per second of /proc times. */
const TICK_HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU time (user + system) of this process's waited-for children so far, in ms. */
function childCpuMs(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields 16 and 17 of stat(5) (cutime, cstime) are at 13 and 14 after the comm
  return ((Number(f[13]) + Number(f[14])) * 1000) / TICK_HZ;
}

interface Row {
  name: string;
  argv: string[];
  stdin?: string;
  /** Throws when the run's result is wrong. */
  check: (stdout: string, stderr: string) => void;
  /** One of issue 14's goals (≤ 1.5× node -e 0). */
  goal: boolean;
  wall: number[];
  cpu: number;
}

function payload(tool: string, input: Record<string, unknown>, id: string): string {
  return JSON.stringify({
    hook_event_name: 'pre_tool_call',
    tool_name: tool,
    tool_input: input,
    session_id: 'sess_bench',
    cwd: '/tmp',
    extra: { task_id: 't', tool_call_id: id, turn_id: 'u', api_request_id: 'r' },
  });
}

const silent = (name: string) => (stdout: string, stderr: string) => {
  if (stdout !== '' || stderr !== '') throw new Error(`${name}: expected no output, got ${stdout}${stderr}`);
};

function rowsFor(label: string, out: string, tree: string, state: string, withFull: boolean): Row[] {
  const node = process.execPath;
  const bin = path.join(out, 'sidecar.js');
  const base = [node, bin, '--state-dir', state];
  const row = (name: string, argv: string[], check: Row['check'], goal: boolean, stdin?: string): Row => ({
    name: `${label}${name}`,
    argv,
    check,
    // the goals are this build's; the before rows are for comparison
    goal: goal && !label,
    wall: [],
    cpu: 0,
    ...(stdin !== undefined ? { stdin } : {}),
  });
  const rows = [
    row(
      'agentkeep --version',
      [node, bin, '--version'],
      (o) => {
        if (o.trim() !== VERSION) throw new Error(`--version printed ${o}`);
      },
      true,
    ),
    row(
      'agentkeep hook run hermes, non-risky terminal call',
      [...base, 'hook', 'run', 'hermes', '--target', `dir:${tree}`],
      silent('hermes'),
      true,
      payload('terminal', { command: 'ls -la && git status' }, 'call_safe'),
    ),
    row(
      'agentkeep hook run agent-zero, non-risky terminal call',
      [...base, 'hook', 'run', 'agent-zero', '--target', `dir:${tree}`],
      silent('agent-zero'),
      true,
      payload('code_execution_tool', { runtime: 'terminal', code: 'ls -la && git status' }, 'call_a0'),
    ),
    row(
      'agentkeep hook run apt --dpkg pre-invoke',
      [...base, 'hook', 'run', 'apt', '--target', `dir:${tree}`, '--budget-ms', '4000', '--dpkg', 'pre-invoke'],
      silent('apt pre-invoke'),
      true,
    ),
    row(
      'agentkeep hook run apt --dpkg post-invoke (no pre: nothing to do)',
      [...base, 'hook', 'run', 'apt', '--target', `dir:${tree}`, '--budget-ms', '4000', '--dpkg', 'post-invoke'],
      silent('apt post-invoke'),
      true,
    ),
  ];
  if (withFull)
    rows.push(
      row(
        'agentkeep --help (full CLI)',
        [node, bin, '--help'],
        (o) => {
          if (!o.includes('Usage: agentkeep')) throw new Error('--help printed no usage');
        },
        false,
      ),
      row(
        'agentkeep restore-point list (full CLI)',
        [...base, 'restore-point', 'list', '--target', `dir:${tree}`, '--json'],
        (o) => {
          if (!Array.isArray(JSON.parse(o))) throw new Error(`restore-point list printed ${o}`);
        },
        false,
      ),
    );
  return rows;
}

function runOnce(r: Row): void {
  const c0 = childCpuMs();
  const t0 = process.hrtime.bigint();
  const p = spawnSync(r.argv[0], r.argv.slice(1), { input: r.stdin ?? '', encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  r.cpu += childCpuMs() - c0;
  if (p.status !== 0) throw new Error(`${r.name}: exited ${p.status}: ${p.stderr}`);
  r.check(p.stdout, p.stderr);
  r.wall.push(ms);
}

async function main(): Promise<void> {
  await buildAgentkeep(ROOT);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-startup-bench-'));
  const tree = path.join(tmp, 'agent');
  const state = path.join(tmp, 'state');
  fs.mkdirSync(path.join(tree, 'notes'), { recursive: true });
  fs.writeFileSync(path.join(tree, 'notes', 'a.txt'), 'hello\n');
  const floor: Row = {
    name: 'node -e 0',
    argv: [process.execPath, '-e', '0'],
    check: silent('node'),
    goal: false,
    wall: [],
    cpu: 0,
  };
  const rows: Row[] = [
    floor,
    ...rowsFor('', path.join(ROOT, 'out'), tree, state, true),
    ...(BEFORE ? rowsFor('before: ', path.join(BEFORE, 'out'), tree, path.join(tmp, 'state-before'), true) : []),
  ];
  // one warm-up round: page cache, and the code cache of the full CLI (written on its first start)
  for (const r of rows) runOnce(r);
  for (const r of rows) {
    r.wall = [];
    r.cpu = 0;
  }
  for (let i = 0; i < ROUNDS; i++) for (let k = 0; k < rows.length; k++) runOnce(rows[(i + k) % rows.length]);

  const base = median(floor.wall);
  const baseCpu = floor.cpu / ROUNDS;
  const p90 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
  const lines = [
    `| process (${ROUNDS} rounds, interleaved) | wall median | wall p90 | × node -e 0 (wall) | CPU per run | × node -e 0 (CPU) |`,
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const cpu = r.cpu / ROUNDS;
      return `| ${r.name} | ${median(r.wall).toFixed(0)} ms | ${p90(r.wall).toFixed(0)} ms | ${(median(r.wall) / base).toFixed(2)}× | ${cpu.toFixed(0)} ms | ${(cpu / baseCpu).toFixed(2)}× |`;
    }),
  ];
  const goals = rows.filter((r) => r.goal);
  const worst = Math.max(...goals.map((r) => median(r.wall) / base));
  const verdict =
    `Goal rows (--version, the hooks' non-risky paths): at most ${worst.toFixed(2)}× node -e 0 (wall medians; ` +
    `goal 1.5×): ${worst <= 1.5 ? 'met' : 'NOT met'}. Load average: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}); Node ${process.version}.`;
  const outText = `${lines.join('\n')}\n\n${verdict}\n`;
  process.stdout.write(outText);
  if (process.env.BENCH_MD) fs.appendFileSync(process.env.BENCH_MD, `\n${outText}`);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
