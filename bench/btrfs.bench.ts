/**
 * Benchmark: AgentKeep `btrfs` restore points vs AgentKeep `dir` vs a shadow-git checkpoint (git add -A
 * && git commit in a separate GIT_DIR, as bench/restore-point.bench.ts), on the same generated trees
 * of 1,000 and 100,000 small files, all on one scratch btrfs filesystem (a loop device made here;
 * needs root). Per size and tool:
 *   1. initial create
 *   2. create after changing 10 files, adding 10 and removing 10 (the common case)
 *   3. restore of the first restore point (AgentKeep: Core.restoreRestorePoint --scope machine,
 *      which includes the automatic pre-restore restore point and the list of changed paths;
 *      git: git clean -fdq && git reset --hard -q <first>)
 *      (steps 2 and 3: median of BENCH_ROUNDS rounds, each changing the tree again first)
 * plus the btrfs backend's restore alone (BtrfsBackend.restore: change list from the send stream,
 * writable snapshot, two renames, background delete of the replaced subvolume; no pre-restore point).
 * Run: npm run bench:btrfs    (= npx tsx bench/btrfs.bench.ts; as root)
 * Env: BENCH_SIZES (1000,100000), BENCH_ROUNDS (3), BENCH_MD=path writes the markdown table there too.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../sidecar/core/core';
import { BtrfsBackend } from '../sidecar/machine/btrfs';
import { resolveTarget } from '../sidecar/core/target';
import { mountLoopBtrfs } from '../test/unit/helpers/btrfs';
import { median, rng, time } from './lib';

const SIZES = (process.env.BENCH_SIZES ?? '1000,100000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** Write `n` small text files (about 200 bytes each, 50 per directory) under `root`. */
function generate(root: string, n: number): void {
  const rand = rng(n);
  for (let i = 0; i < n; i++) {
    const d = path.join(root, `pkg${Math.floor(i / 5000)}`, `mod${Math.floor(i / 50) % 100}`);
    if (i % 50 === 0) fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, `f${i}.txt`), `${i} ${rand().toString(36).repeat(12)}\n`);
  }
}

/** Change 10 files, add 10, remove 10 (round `r`). */
function mutate(root: string, n: number, r: number): void {
  for (let k = 0; k < 10; k++) {
    const i = (r * 97 + k * 31) % n;
    const f = path.join(root, `pkg${Math.floor(i / 5000)}`, `mod${Math.floor(i / 50) % 100}`, `f${i}.txt`);
    if (fs.existsSync(f)) fs.appendFileSync(f, `changed in round ${r}\n`);
    fs.writeFileSync(path.join(root, 'pkg0', 'mod0', `new-${r}-${k}.txt`), `new ${r} ${k}\n`);
    const g = path.join(
      root,
      `pkg${Math.floor(((i + 7) % n) / 5000)}`,
      `mod${Math.floor(((i + 7) % n) / 50) % 100}`,
      `f${(i + 7) % n}.txt`,
    );
    fs.rmSync(g, { force: true });
  }
}

type Row = { initial: number; create: number; restore: number; swap?: number };

async function main(): Promise<void> {
  const t0 = Date.now();
  const lb = mountLoopBtrfs(Math.max(1024, Math.ceil((Math.max(...SIZES) * 8 * 4096) / 1024 / 1024) + 512));
  try {
    const lines: string[] = [];
    const results: Array<{ n: number; btrfs: Row; dir: Row; git: Row }> = [];
    for (const n of SIZES) {
      console.log(`\n== ${n} files ==`);
      const sv = lb.subvolume(`btrfs-${n}`);
      generate(sv, n);
      const plain = path.join(lb.mnt, `dir-${n}`);
      const gitTree = path.join(lb.mnt, `git-${n}`);
      execFileSync('cp', ['-a', '--reflink=never', `${sv}/.`, `${plain}/`]);
      execFileSync('cp', ['-a', '--reflink=never', `${sv}/.`, `${gitTree}/`]);
      const state = path.join(lb.mnt, `state-${n}`);
      const core = new Core({ stateDir: state });
      const gitDir = path.join(lb.mnt, `shadow-${n}.git`);
      const git = (...args: string[]): string =>
        execFileSync('git', args, {
          env: { ...process.env, GIT_DIR: gitDir, GIT_WORK_TREE: gitTree, GIT_CONFIG_NOSYSTEM: '1', HOME: lb.base },
          maxBuffer: 1 << 26,
        }).toString();
      git('init', '-q');
      git('config', 'user.name', 'Bench Checkpoint');
      git('config', 'user.email', 'bench@example.invalid');
      git('config', 'commit.gpgSign', 'false');
      git('config', 'gc.auto', '0');
      await new Promise((r) => setTimeout(r, 200)); // past the dir stat cache's racy window

      const row = async (target: string, tree: string): Promise<Row> => {
        const [initial, first] = await time(() => core.createRestorePoint({ target, stores: [] }));
        const creates: number[] = [];
        const restores: number[] = [];
        for (let r = 1; r <= ROUNDS; r++) {
          mutate(tree, n, r);
          creates.push((await time(() => core.createRestorePoint({ target, stores: [] })))[0]);
          const [ms, rr] = await time(() => core.restoreRestorePoint({ target, id: first.id, scope: 'machine' }));
          restores.push(ms);
          console.log(
            `${target}: restore changed ${rr.changes.added.length + rr.changes.removed.length + rr.changes.changed.length} paths in ${ms.toFixed(0)} ms`,
          );
        }
        return { initial, create: median(creates), restore: median(restores) };
      };
      const b = await row(`btrfs:${sv}`, sv);
      // The backend's rollback alone (what the core adds around it: lock, pre-restore point, journal).
      const backend = new BtrfsBackend({
        target: await resolveTarget(`btrfs:${sv}`),
        layout: core.layout,
        objects: core.objects,
      });
      const first = (await core.listRestorePoints({ target: `btrfs:${sv}` })).at(-1)!.id;
      const swaps: number[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        mutate(sv, n, 10 + r);
        const cur = `ak_bench_cur_${r}`;
        await backend.create(cur, {});
        swaps.push((await time(() => backend.restore(first, { currentId: cur })))[0]);
      }
      b.swap = median(swaps);
      const d = await row(`dir:${plain}`, plain);
      const g: Row = { initial: 0, create: 0, restore: 0 };
      [g.initial] = await time(() => {
        git('add', '-A');
        git('commit', '-q', '-m', 'initial');
      });
      const c1 = git('rev-parse', 'HEAD').trim();
      const gc: number[] = [];
      const gr: number[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        mutate(gitTree, n, r);
        gc.push(
          (
            await time(() => {
              git('add', '-A');
              git('commit', '-q', '-m', `round ${r}`);
            })
          )[0],
        );
        gr.push(
          (
            await time(() => {
              git('clean', '-fdq');
              git('reset', '--hard', '-q', c1);
            })
          )[0],
        );
      }
      g.create = median(gc);
      g.restore = median(gr);
      results.push({ n, btrfs: b, dir: d, git: g });
      console.log(JSON.stringify(results.at(-1)));
    }
    const fmt = (ms: number): string => (ms < 100 ? ms.toFixed(1) : ms.toFixed(0));
    const ratio = (a: number, b: number): string => (a / b).toFixed(3);
    lines.push(
      '| files | step | AgentKeep btrfs | AgentKeep dir | shadow git | btrfs / dir | btrfs / git |',
      '|---|---|---|---|---|---|---|',
    );
    for (const r of results) {
      for (const step of ['initial', 'create', 'restore'] as const) {
        lines.push(
          `| ${r.n.toLocaleString('en')} | ${step === 'initial' ? 'initial create' : step === 'create' ? 'create after 30 changes' : 'restore (incl. pre-restore point + change list)'} | ${fmt(r.btrfs[step])} ms | ${fmt(r.dir[step])} ms | ${fmt(r.git[step])} ms | ${ratio(r.btrfs[step], r.dir[step])} | ${ratio(r.btrfs[step], r.git[step])} |`,
        );
      }
      lines.push(
        `| ${r.n.toLocaleString('en')} | btrfs backend restore alone (no pre-restore point) | ${fmt(r.btrfs.swap ?? 0)} ms | | | | |`,
      );
    }
    const info = `node ${process.version}, ${execFileSync('btrfs', ['--version']).toString().trim()}, ${execFileSync('git', ['--version']).toString().trim()}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.release()}, loop-device btrfs on ${os.tmpdir()}`;
    const table = lines.join('\n');
    console.log('\n' + table + '\n\n' + info);
    console.log(`total bench time ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    if (process.env.BENCH_MD) fs.writeFileSync(process.env.BENCH_MD, table + '\n\n' + info + '\n');
  } finally {
    lb.cleanup();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
