/**
 * Benchmark: AgentKeep `dir` restore points vs a shadow-git checkpoint (what Cline and Hermes do) vs
 * tar, on the same generated tree (default 20,000 files, ~300 MB: small text files plus some
 * multi-MB binaries), in one run:
 *   1. initial create            (AgentKeep create | git add -A && git commit | tar -cf)
 *   2. incremental create after changing 10 files (median of ROUNDS rounds)
 *   3. restore of the first point (AgentKeep restore --scope machine, which includes its automatic
 *      pre-restore capture | git clean -fdq && git reset --hard -q <first> (Roo/Cline) |
 *      rm -rf + tar -xf)
 * Run: npm run bench    (= npx tsx bench/restore-point.bench.ts)
 * Env: BENCH_FILES (20000), BENCH_MB (300), BENCH_ROUNDS (5), BENCH_DIR (os.tmpdir()/agentkeep-bench),
 *      BENCH_KEEP=1 keeps the data, BENCH_MD=path writes the markdown table there too.
 * AgentKeep is measured in process (Core.createRestorePoint, as the sidecar serves it); git and tar
 * as child processes (their start-up, a few ms, is included).
 */
import { execFileSync, execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../sidecar/core/core';
import { median, rng, time } from './lib';

const FILES = Number(process.env.BENCH_FILES ?? 20000);
const MB = Number(process.env.BENCH_MB ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-bench');
const BIN_COUNT = Math.max(1, Math.round(FILES / 400)); // 50 binaries for 20k files
const BIN_SHARE = 0.65; // share of the bytes in binaries

const tree = path.join(BASE, 'tree');
const stateDir = path.join(BASE, 'state');
const gitDir = path.join(BASE, 'shadow.git');
const tarDir = path.join(BASE, 'tar');

const WORDS =
  'agent memory restore point snapshot install package node python venv cache config skill session tool call file tree hash object manifest lock journal'.split(
    ' ',
  );

function textOf(rand: () => number, bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const w = WORDS[Math.floor(rand() * WORDS.length)];
    parts.push(w);
    n += w.length + 1;
    if (rand() < 0.08) parts.push('\n');
  }
  return parts.join(' ').slice(0, bytes);
}

function generate(): string[] {
  const rand = rng(42);
  fs.rmSync(BASE, { recursive: true, force: true });
  fs.mkdirSync(tree, { recursive: true });
  const textFiles = FILES - BIN_COUNT;
  const textBytes = (MB * 1024 * 1024 * (1 - BIN_SHARE)) / textFiles;
  const binBytes = Math.round((MB * 1024 * 1024 * BIN_SHARE) / BIN_COUNT);
  const files: string[] = [];
  for (let i = 0; i < textFiles; i++) {
    const d = path.join(`pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 50) % 20}`);
    fs.mkdirSync(path.join(tree, d), { recursive: true });
    const rel = path.join(d, `file${i}.${['js', 'py', 'md', 'json', 'txt'][i % 5]}`);
    const size = Math.max(16, Math.round(textBytes * (0.2 + rand() * 1.6)));
    fs.writeFileSync(path.join(tree, rel), textOf(rand, size));
    files.push(rel);
  }
  fs.mkdirSync(path.join(tree, 'blobs'), { recursive: true });
  for (let i = 0; i < BIN_COUNT; i++) {
    const rel = path.join('blobs', `blob${i}.bin`);
    fs.writeFileSync(path.join(tree, rel), randomBytes(binBytes));
    files.push(rel);
  }
  return files;
}

function duBytes(p: string): number {
  let out: string;
  try {
    out = execFileSync('du', ['-sb', p], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (e) {
    out = String((e as { stdout?: Buffer }).stdout ?? '0'); // a file vanished meanwhile
  }
  return Number(out.split('\t')[0]);
}

const git = (...args: string[]): string =>
  execFileSync('git', args, {
    env: { ...process.env, GIT_DIR: gitDir, GIT_WORK_TREE: tree, GIT_CONFIG_NOSYSTEM: '1', HOME: BASE },
    maxBuffer: 1 << 26,
  }).toString();

async function main(): Promise<void> {
  const t0 = Date.now();
  console.log(`Generating ${FILES} files, ~${MB} MB under ${tree} ...`);
  const files = generate();
  execSync('sync');
  await new Promise((r) => setTimeout(r, 200)); // let file timestamps age past the racy window
  const core = new Core({ stateDir });
  const target = `dir:${tree}`;
  git('init', '-q');
  git('config', 'user.name', 'Bench Checkpoint');
  git('config', 'user.email', 'bench@example.invalid');
  git('config', 'commit.gpgSign', 'false');
  git('config', 'gc.auto', '0'); // no background gc racing the timings
  fs.mkdirSync(tarDir, { recursive: true });

  const res: Record<string, Record<string, number>> = { agentkeep: {}, git: {}, tar: {} };

  // 1. initial
  const [akInit, rp1] = await time(() => core.createRestorePoint({ target, label: 'initial' }));
  res.agentkeep.initial = akInit;
  res.git.initial = (
    await time(() => {
      git('add', '-A');
      git('commit', '-q', '-m', 'initial');
    })
  )[0];
  const c1 = git('rev-parse', 'HEAD').trim();
  res.tar.initial = (await time(() => execFileSync('tar', ['-cf', path.join(tarDir, '1.tar'), '-C', tree, '.'])))[0];

  // 2. incremental: change 10 files (8 text edits, 1 binary rewrite, 1 new file), ROUNDS times
  const rand = rng(7);
  const ak: number[] = [];
  const gi: number[] = [];
  const ta: number[] = [];
  let akNew = 0;
  for (let r = 0; r < ROUNDS; r++) {
    await new Promise((res2) => setTimeout(res2, 120));
    for (let k = 0; k < 8; k++)
      fs.appendFileSync(path.join(tree, files[Math.floor(rand() * (files.length - BIN_COUNT))]), `\nedit ${r}.${k}\n`);
    fs.writeFileSync(path.join(tree, files[files.length - 1 - r]), randomBytes(1 << 20));
    fs.writeFileSync(path.join(tree, `new-${r}.txt`), `new file ${r}\n`);
    await new Promise((res2) => setTimeout(res2, 120));
    const [a, rp] = await time(() => core.createRestorePoint({ target, label: `round ${r}` }));
    ak.push(a);
    akNew = rp.machine.newBytes;
    gi.push(
      (
        await time(() => {
          git('add', '-A');
          git('commit', '-q', '-m', `round ${r}`);
        })
      )[0],
    );
    ta.push((await time(() => execFileSync('tar', ['-cf', path.join(tarDir, `inc${r}.tar`), '-C', tree, '.'])))[0]);
  }
  console.log(
    `incremental rounds (ms): AgentKeep ${ak.map((x) => x.toFixed(0)).join(', ')} | git ${gi.map((x) => x.toFixed(0)).join(', ')} | tar ${ta.map((x) => x.toFixed(0)).join(', ')}`,
  );
  res.agentkeep.incremental = median(ak);
  res.git.incremental = median(gi);
  res.tar.incremental = median(ta);
  const cLast = git('rev-parse', 'HEAD').trim();

  // 3. restore of the first point, each from the same state (the last round's tree)
  const [akRes, rr] = await time(() => core.restoreRestorePoint({ target, id: rp1.id, scope: 'machine' }));
  res.agentkeep.restore = akRes;
  git('reset', '--hard', '-q', cLast); // back to the last state (not timed)
  res.git.restore = (
    await time(() => {
      git('clean', '-fdq');
      git('reset', '--hard', '-q', c1);
    })
  )[0];
  res.tar.restore = (
    await time(() => {
      fs.rmSync(tree, { recursive: true, force: true });
      fs.mkdirSync(tree);
      execFileSync('tar', ['-xf', path.join(tarDir, '1.tar'), '-C', tree]);
    })
  )[0];

  const sizes = { agentkeep: duBytes(stateDir), git: duBytes(gitDir), tar: duBytes(tarDir) };
  const fmt = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
  const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;
  const rows = [
    `| step | AgentKeep dir | shadow git | tar | AgentKeep / git | AgentKeep / tar |`,
    `|---|---:|---:|---:|---:|---:|`,
  ];
  for (const step of ['initial', 'incremental', 'restore']) {
    const a = res.agentkeep[step];
    rows.push(
      `| ${step} | ${fmt(a)} | ${fmt(res.git[step])} | ${fmt(res.tar[step])} | ${ratio(a, res.git[step])} | ${ratio(a, res.tar[step])} |`,
    );
  }
  rows.push(
    `| store on disk after all steps | ${(sizes.agentkeep / 1e6).toFixed(0)} MB | ${(sizes.git / 1e6).toFixed(0)} MB | ${(sizes.tar / 1e6).toFixed(0)} MB | ${ratio(sizes.agentkeep, sizes.git)} | ${ratio(sizes.agentkeep, sizes.tar)} |`,
  );
  const table = rows.join('\n');
  const info =
    `tree: ${FILES} files (${BIN_COUNT} binaries), ${(duBytes(tree) / 1e6).toFixed(0)} MB; incremental = median of ${ROUNDS} rounds of 10 changed files; ` +
    `AgentKeep stored ${(akNew / 1e6).toFixed(2)} MB new in the last round; restore changed ${rr.changes.changed.length + rr.changes.added.length + rr.changes.removed.length} paths; ` +
    `node ${process.version}, ${execFileSync('git', ['--version']).toString().trim()}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.release()}`;
  console.log('\n' + table + '\n\n' + info);
  console.log(
    `\nincremental create: AgentKeep / shadow git = ${(res.agentkeep.incremental / res.git.incremental).toFixed(2)} (aim ≤ 0.50)`,
  );
  console.log(`total bench time ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (process.env.BENCH_MD) fs.writeFileSync(process.env.BENCH_MD, table + '\n\n' + info + '\n');
  if (!process.env.BENCH_KEEP) fs.rmSync(BASE, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
