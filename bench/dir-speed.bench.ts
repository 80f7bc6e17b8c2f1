/**
 * Benchmark (issue 14): the `dir` backend (embedded default) vs a shadow-git checkpoint, side by side
 * in one run, at 1,000, 20,000 and 100,000 files (small text files, 50 per directory, as
 * bench/btrfs.bench.ts, plus one 2 MiB binary per 1,000 files). Two identical copies of each tree:
 * one for AgentKeep, one for git (`git add -A && git commit -q` with a separate GIT_DIR, as
 * bench/restore-point.bench.ts). Per size:
 *   1. initial create                       (AgentKeep createRestorePoint | git add -A && git commit)
 *   2. create after a small change: 10 files edited, 10 added, 10 removed (median of BENCH_ROUNDS)
 *   3. restore of the first restore point from a tree changed again the same way (median of
 *      BENCH_ROUNDS): AgentKeep restoreRestorePoint --scope machine, which INCLUDES its undo point
 *      (the automatic pre-restore restore point) | git clean -fdq && git reset --hard -q <first>.
 *      After every restore both trees are compared with the first state, byte for byte (type, mode,
 *      sha256 of every file, link target): a wrong restore fails the bench.
 *   4. at the largest size: peak memory (max RSS, /usr/bin/time) of a create after a small change
 *      through the real CLI (node out/sidecar.js restore-point create) vs git add and git commit
 *      (the larger of the two), and of `node -e 0` for reference.
 * AgentKeep steps 1-3 run in process (Core, as the sidecar serves it: `changeJournal: true`, the
 * inotify change journal of sidecar/machine/dir/journal.ts) and, on a third copy, with the journal
 * off (as a one-shot CLI process runs it: the full walk); git as child processes (their start-up, a
 * few ms, is included). The steps alternate round by round, so load from other jobs hits all alike.
 * Run: npm run bench:dir   (= npx tsx bench/dir-speed.bench.ts; step 4 needs `npm run build` first)
 * Env: BENCH_SIZES (1000,20000,100000), BENCH_ROUNDS (5), BENCH_DIR (os.tmpdir()/agentkeep-dirspeed),
 *      BENCH_MD=path writes the markdown table there too, BENCH_CLI (out/sidecar.js),
 *      BENCH_NO_JOURNAL_ROW=0 leaves out the journal-off copy.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../sidecar/core/core';
import { closeJournals, existingJournal } from '../sidecar/machine/dir/journal';
import { generate, median, mutate, time } from './lib';

const SIZES = (process.env.BENCH_SIZES ?? '1000,20000,100000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-dirspeed');
const CLI = process.env.BENCH_CLI ?? path.join(__dirname, '..', 'out', 'sidecar.js');
const OFF_ROW = process.env.BENCH_NO_JOURNAL_ROW !== '0';

/** Every entry of a tree: path -> type, mode and sha256 (files) or link target (byte-identical check). */
function describe(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const n of fs.readdirSync(rel ? path.join(root, rel) : root)) {
      const p = rel ? `${rel}/${n}` : n;
      const abs = path.join(root, p);
      const st = fs.lstatSync(abs);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        out.set(p, `d ${mode}`);
        walk(p);
      } else if (st.isSymbolicLink()) out.set(p, `l ${fs.readlinkSync(abs)}`);
      else out.set(p, `f ${mode} ${createHash('sha256').update(fs.readFileSync(abs)).digest('hex')}`);
    }
  };
  walk('');
  return out;
}

function assertSame(actual: Map<string, string>, expected: Map<string, string>, what: string): void {
  for (const [p, d] of expected)
    if (actual.get(p) !== d) throw new Error(`${what}: ${p} is ${actual.get(p) ?? 'missing'}, expected ${d}`);
  for (const p of actual.keys()) if (!expected.has(p)) throw new Error(`${what}: ${p} should not exist`);
}

/** Max RSS (KiB) of a command, from GNU time. */
function maxRssKiB(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const r = spawnSync('/usr/bin/time', ['-f', 'maxrss=%M', cmd, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  const m = /maxrss=(\d+)/.exec(r.stderr);
  if (!m) throw new Error(`no max RSS from /usr/bin/time: ${r.stderr}`);
  return Number(m[1]);
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Side {
  initial: number;
  create: number;
  restore: number;
  creates: number[];
  restores: number[];
}
interface Row {
  n: number;
  ak: Side;
  off: Side;
  git: Side;
  restored: number;
  /** How the journal's creates scanned (journal.ts notes), per create. */
  notes: string[];
}
const side = (initial: number): Side => ({ initial, create: 0, restore: 0, creates: [], restores: [] });

/**
 * An untimed create, change, create and restore on a small tree, with and without the journal: the
 * bench runs the sidecar's TypeScript through tsx, which compiles each module on its first use, so
 * the first timed create (the initial create of the smallest size) would time the compiler, which
 * the built sidecar (out/) does not run.
 */
async function warmUp(): Promise<void> {
  const base = path.join(BASE, 'warm-up');
  fs.rmSync(base, { recursive: true, force: true });
  for (const journal of [true, false]) {
    const tree = path.join(base, `tree-${journal}`);
    generate(tree, 60);
    const core = new Core({ stateDir: path.join(base, `state-${journal}`), changeJournal: journal });
    const target = `dir:${tree}`;
    const rp = await core.createRestorePoint({ target, stores: [] });
    mutate(tree, 60, 1);
    await core.createRestorePoint({ target, stores: [] });
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
  }
  closeJournals();
  fs.rmSync(base, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const rows: Row[] = [];
  let memory: { ak: number; git: number; node: number; n: number } | undefined;
  await warmUp();
  for (const n of SIZES) {
    const base = path.join(BASE, String(n));
    fs.rmSync(base, { recursive: true, force: true });
    const akTree = path.join(base, 'ak-tree');
    const offTree = path.join(base, 'off-tree');
    const gitTree = path.join(base, 'git-tree');
    const state = path.join(base, 'state');
    const gitDir = path.join(base, 'shadow.git');
    console.log(`\n== ${n.toLocaleString('en')} files ==`);
    generate(akTree, n);
    execFileSync('cp', ['-a', `${akTree}/.`, `${gitTree}/`]);
    if (OFF_ROW) execFileSync('cp', ['-a', `${akTree}/.`, `${offTree}/`]);
    const first = describe(akTree);
    const env = { ...process.env, GIT_DIR: gitDir, GIT_WORK_TREE: gitTree, GIT_CONFIG_NOSYSTEM: '1', HOME: base };
    const git = (...args: string[]): string => execFileSync('git', args, { env, maxBuffer: 1 << 26 }).toString();
    git('init', '-q');
    git('config', 'user.name', 'Bench Checkpoint');
    git('config', 'user.email', 'bench@example.invalid');
    git('config', 'commit.gpgSign', 'false');
    git('config', 'gc.auto', '0'); // no background gc racing the timings
    execFileSync('sync');
    await pause(200); // file timestamps older than the stat cache's racy window
    const core = new Core({ stateDir: state, changeJournal: true });
    const offCore = new Core({ stateDir: path.join(base, 'state-off') });
    const target = `dir:${akTree}`;
    const offTarget = `dir:${offTree}`;
    const [akInit, rp1] = await time(() => core.createRestorePoint({ target, stores: [] }));
    const journal = existingJournal(akTree);
    const notes: string[] = [];
    const note = (): void => void notes.push(journal?.lastNote ?? '(no journal)');
    note();
    const [offInit, off1] = OFF_ROW
      ? await time(() => offCore.createRestorePoint({ target: offTarget, stores: [] }))
      : [0, undefined];
    const [gitInit] = await time(() => {
      git('add', '-A');
      git('commit', '-q', '-m', 'initial');
    });
    const c1 = git('rev-parse', 'HEAD').trim();
    const row: Row = { n, ak: side(akInit), off: side(offInit), git: side(gitInit), restored: 0, notes };
    for (let r = 1; r <= ROUNDS; r++) {
      mutate(akTree, n, r);
      mutate(gitTree, n, r);
      if (OFF_ROW) mutate(offTree, n, r);
      await pause(120);
      row.ak.creates.push((await time(() => core.createRestorePoint({ target, stores: [] })))[0]);
      note();
      if (OFF_ROW)
        row.off.creates.push((await time(() => offCore.createRestorePoint({ target: offTarget, stores: [] })))[0]);
      row.git.creates.push(
        (
          await time(() => {
            git('add', '-A');
            git('commit', '-q', '-m', `round ${r}`);
          })
        )[0],
      );
      mutate(akTree, n, 100 + r);
      mutate(gitTree, n, 100 + r);
      if (OFF_ROW) mutate(offTree, n, 100 + r);
      await pause(120);
      const [akMs, rr] = await time(() => core.restoreRestorePoint({ target, id: rp1.id, scope: 'machine' }));
      row.ak.restores.push(akMs);
      note();
      if (OFF_ROW && off1)
        row.off.restores.push(
          (await time(() => offCore.restoreRestorePoint({ target: offTarget, id: off1.id, scope: 'machine' })))[0],
        );
      row.restored = rr.changes.added.length + rr.changes.removed.length + rr.changes.changed.length;
      row.git.restores.push(
        (
          await time(() => {
            git('clean', '-fdq');
            git('reset', '--hard', '-q', c1);
          })
        )[0],
      );
      assertSame(describe(akTree), first, `AgentKeep restore, round ${r}`);
      assertSame(describe(gitTree), first, `git restore, round ${r}`);
      if (OFF_ROW) assertSame(describe(offTree), first, `AgentKeep (journal off) restore, round ${r}`);
    }
    for (const k of ['ak', 'off', 'git'] as const) {
      row[k].create = median(row[k].creates);
      row[k].restore = median(row[k].restores);
    }
    const ms = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
    console.log(
      `create rounds (ms): AgentKeep ${ms(row.ak.creates)} | journal off ${ms(row.off.creates)} | git ${ms(row.git.creates)}\n` +
        `restore rounds (ms): AgentKeep ${ms(row.ak.restores)} | journal off ${ms(row.off.restores)} | git ${ms(row.git.restores)} (${row.restored} paths; every restore byte-identical)\n` +
        `journal notes: ${[...new Set(row.notes)].map((x) => `${row.notes.filter((y) => y === x).length}× ${x}`).join('; ')}`,
    );
    const full = row.notes.slice(1).filter((x) => !x.startsWith('journal:'));
    if (full.length) console.log(`NOTE: ${full.length} creates after the first did the full walk`);
    closeJournals();
    rows.push(row);
    if (n === Math.max(...SIZES) && fs.existsSync(CLI)) {
      mutate(akTree, n, 500);
      mutate(gitTree, n, 500);
      await pause(120);
      const ak = maxRssKiB(process.execPath, [
        CLI,
        '--state-dir',
        state,
        'restore-point',
        'create',
        '--target',
        target,
        '--json',
      ]);
      const g = Math.max(maxRssKiB('git', ['add', '-A'], env), maxRssKiB('git', ['commit', '-q', '-m', 'mem'], env));
      memory = { ak, git: g, node: maxRssKiB(process.execPath, ['-e', '0']), n };
    } else if (n === Math.max(...SIZES)) console.log(`(no ${CLI}: run npm run build for the memory row)`);
    fs.rmSync(base, { recursive: true, force: true });
  }

  const fmt = (x: number): string => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(1)} ms`);
  const lines = [
    '| files | step | AgentKeep dir (journal) | journal off | shadow git | AgentKeep / git | journal off / git | goal |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  const ratio = (a: number, b: number): string => (a > 0 ? `${(a / b).toFixed(2)}×` : '–');
  const t = (x: number): string => (x > 0 ? fmt(x) : '–');
  for (const r of rows) {
    const f = r.n.toLocaleString('en');
    const line = (step: string, k: 'initial' | 'create' | 'restore', goal: string): string =>
      `| ${f} | ${step} | ${fmt(r.ak[k])} | ${t(r.off[k])} | ${fmt(r.git[k])} | ${ratio(r.ak[k], r.git[k])} | ${ratio(r.off[k], r.git[k])} | ${goal} |`;
    lines.push(
      line('initial create', 'initial', '≤ 0.5×'),
      line(`create after 30 changes (median of ${ROUNDS})`, 'create', '≤ 0.5×'),
      line(`restore incl. undo point, ${r.restored} paths (median of ${ROUNDS})`, 'restore', '≤ 1.0×'),
    );
  }
  if (memory)
    lines.push(
      `| ${memory.n.toLocaleString('en')} | peak memory of a create via the CLI (no journal; max RSS; \`node -e 0\`: ${(memory.node / 1024).toFixed(0)} MiB) | ${(memory.ak / 1024).toFixed(0)} MiB | – | ${(memory.git / 1024).toFixed(0)} MiB | ${(memory.ak / memory.git).toFixed(2)}× | – | ≤ 2× |`,
    );
  const load = os.loadavg().map((x) => x.toFixed(1));
  const info =
    `node ${process.version}, ${execFileSync('git', ['--version']).toString().trim()}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ` +
    `${os.platform()} ${os.release()}, load average ${load.join(' ')} at the end; every restore checked byte-identical`;
  const table = lines.join('\n');
  console.log('\n' + table + '\n\n' + info);
  console.log(`total bench time ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (process.env.BENCH_MD) fs.writeFileSync(process.env.BENCH_MD, table + '\n\n' + info + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
