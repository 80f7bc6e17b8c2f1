/**
 * Ctrl+C / SIGTERM during create and restore, with the real `agentkeep` program (out/sidecar.js) as
 * a child process and real signals: create stops cleanly (no restore point, no lock, no temp objects,
 * target untouched); a restore finishes after one signal, stops after a second one leaving no temp
 * files and naming an undo command that works.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveTarget } from '../../sidecar/core/target';
import { buildSidecar, runSidecar, SIDECAR } from './helpers/sidecar';
import { describeTree, tempLeftovers, tempSetup } from './dir-fixtures';

interface Running {
  proc: ChildProcess;
  stderr: () => string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function start(args: string[]): Running {
  const proc = spawn(process.execPath, [SIDECAR, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) =>
    proc.on('close', (code) => r({ code, stdout: out, stderr: err })),
  );
  return { proc, stderr: () => err, done };
}

/** Poll `cond` every 5 ms until it holds (rejects after `ms`). */
async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** 16 x 500 files of ~2 KB: big enough that a create and a full restore take a noticeable time (a signal lands mid-way). */
function bigTree(root: string, word: string): void {
  const pad = ' '.repeat(2000);
  for (let d = 0; d < 16; d++) {
    fs.mkdirSync(path.join(root, `d${d}`), { recursive: true });
    for (let i = 0; i < 500; i++) fs.writeFileSync(path.join(root, `d${d}`, `f${i}.txt`), `${word} ${d} ${i} ${pad}`);
  }
}

describe('CLI: Ctrl+C and SIGTERM during create and restore (real process, real signals)', function () {
  this.timeout(120_000);
  let s: ReturnType<typeof tempSetup>;
  before(() => buildSidecar());
  beforeEach(() => (s = tempSetup('ak-sig-')));
  afterEach(() => s.cleanup());

  const args = (...a: string[]): string[] => [...a, '--target', s.target, '--state-dir', s.state];
  const lockFiles = (): string[] => fs.readdirSync(path.join(s.state, 'locks')).filter((n) => n.endsWith('.lock'));
  let key = '';
  beforeEach(async () => (key = (await resolveTarget(s.target)).key));
  const journalIds = (): string[] => {
    const dir = path.join(s.state, 'journal', key);
    return fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => /^ak_\w+\.json$/.test(n)) : [];
  };

  it('create: SIGINT stops it cleanly; nothing recorded, no lock, no temp objects, target untouched', async () => {
    bigTree(s.tree, 'v1');
    const before = describeTree(s.tree);
    const r = start(args('restore-point', 'create'));
    const objects = path.join(s.state, 'objects');
    // objects being stored: 8,000 files go into one pack (core/packs.ts), written in objects/tmp/ first
    const packing = (): boolean =>
      fs.existsSync(path.join(objects, 'tmp')) &&
      fs
        .readdirSync(path.join(objects, 'tmp'))
        .some((n) => (fs.statSync(path.join(objects, 'tmp', n), { throwIfNoEntry: false })?.size ?? 0) > 0);
    await until(
      () => fs.existsSync(objects) && (fs.readdirSync(objects).length > 3 || packing()),
      'objects being stored',
    );
    r.proc.kill('SIGINT');
    const res = await r.done;
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /SIGINT: stopping; nothing in the target is changed/);
    assert.match(res.stderr, /Interrupted: the restore point was not created; nothing in the target was changed\./);
    assert.deepEqual(journalIds(), []);
    assert.deepEqual(lockFiles(), []);
    assert.deepEqual(fs.readdirSync(path.join(objects, 'tmp')), []);
    assert.deepEqual(describeTree(s.tree), before);
    // and the next create works
    const again = await runSidecar(args('restore-point', 'create', '--json'));
    assert.equal(again.code, 0, again.stderr);
  });

  /**
   * Whether the restore has started writing the tree: one of the first files in path order is back
   * at v1. (The pre-restore point appearing in the journal is not enough: the journal's directory
   * fsync can still be running, so the CLI may not know yet that writing begins.)
   */
  const writingStarted = (): boolean => {
    for (let i = 0; i < 10; i++) {
      try {
        if (fs.readFileSync(path.join(s.tree, 'd0', `f${i}.txt`), 'utf8').startsWith('v1 ')) return true;
      } catch {
        /* mid-rename */
      }
    }
    return false;
  };

  /** A restore point of the v1 tree, then every file changed to v2; returns the id and both trees. */
  async function prepareRestore(): Promise<{
    id: string;
    v1: ReturnType<typeof describeTree>;
    v2: ReturnType<typeof describeTree>;
  }> {
    bigTree(s.tree, 'v1');
    const v1 = describeTree(s.tree);
    const c = await runSidecar(args('restore-point', 'create', '--json'));
    assert.equal(c.code, 0, c.stderr);
    bigTree(s.tree, 'v2');
    return { id: (JSON.parse(c.stdout) as { id: string }).id, v1, v2: describeTree(s.tree) };
  }

  it('restore: one SIGINT while writing prints the undo line and lets the restore finish', async () => {
    const { id, v1 } = await prepareRestore();
    const r = start(args('restore-point', 'restore', id, '--scope', 'both', '--yes'));
    // The pre-restore point is in the journal and the first files are back at v1: the restore is writing.
    await until(() => journalIds().length >= 2, 'the pre-restore point');
    await until(writingStarted, 'the first restored file');
    r.proc.kill('SIGINT');
    const res = await r.done;
    assert.equal(res.code, 0, res.stderr);
    assert.match(
      res.stderr,
      /agentkeep: finishing the restore so the tree is not left half-written; Ctrl\+C again to stop now\. Undo with: agentkeep restore-point restore ak_\w+ --target \S+ --state-dir \S+ --scope both --yes$/m,
    );
    assert.match(res.stdout, new RegExp(`Restored ${id}`));
    assert.deepEqual(describeTree(s.tree), v1);
    assert.deepEqual(lockFiles(), []);
  });

  it('restore: a second signal stops it, leaves no temp files, and its undo command puts the tree back', async () => {
    const { id, v2 } = await prepareRestore();
    const r = start(args('restore-point', 'restore', id, '--scope', 'both', '--yes'));
    await until(() => journalIds().length >= 2, 'the pre-restore point');
    await until(writingStarted, 'the first restored file');
    r.proc.kill('SIGINT');
    await until(() => /finishing the restore/.test(r.stderr()), 'the finishing line');
    r.proc.kill('SIGTERM');
    const res = await r.done;
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, new RegExp(`Interrupted: the restore of ${id} was stopped part-way`));
    // the printed command names the non-default state dir, so it works as printed
    const undo =
      /Undo with: (agentkeep restore-point restore (ak_\w+) --target \S+ --state-dir \S+ --scope both --yes)/.exec(
        res.stderr,
      );
    assert.ok(undo, res.stderr);
    assert.deepEqual(tempLeftovers(s.tree), [], 'no .ak-tmp- files left in the target');
    assert.deepEqual(lockFiles(), []);
    // a create now does not capture anything of ours, and the undo command restores the state before
    const back = await runSidecar(undo[1].split(' ').slice(1));
    assert.equal(back.code, 0, back.stderr);
    assert.deepEqual(describeTree(s.tree), v2);
  });

  it('restore: killed hard while writing (SIGKILL), list says the target may be half-restored and how to finish or go back', async () => {
    const { id, v1 } = await prepareRestore();
    const r = start(args('restore-point', 'restore', id, '--scope', 'machine', '--yes'));
    await until(() => journalIds().length >= 2, 'the pre-restore point');
    await until(writingStarted, 'the first restored file');
    r.proc.kill('SIGKILL');
    await r.done;
    const l = await runSidecar(args('restore-point', 'list', '--json'));
    assert.equal(l.code, 0, l.stderr);
    JSON.parse(l.stdout); // stdout stays pure JSON; the warning is on stderr
    const finish = new RegExp(
      `a restore of ${id} \\(scope machine\\) started \\S+ never finished: \\S+ may be half-restored\\. Finish it: (agentkeep restore-point restore ${id} --target \\S+ --state-dir \\S+ --scope machine --yes), or go back: agentkeep restore-point restore ak_\\w+`,
    );
    const m = finish.exec(l.stderr);
    assert.ok(m, l.stderr);
    // a restore point taken now says it may hold the half-restored state
    const snap = await runSidecar(args('restore-point', 'create', '--json'));
    assert.equal(snap.code, 0, snap.stderr);
    assert.match(snap.stderr, /warning: A restore of ak_\w+ never finished .* may hold a half-restored target/);
    const done = await runSidecar(m[1].split(' ').slice(1));
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(describeTree(s.tree), v1);
    const again = await runSidecar(args('restore-point', 'list'));
    assert.doesNotMatch(again.stderr, /never finished/);
  });

  it('restore: a signal before the tree is touched stops it with nothing changed', async () => {
    const { id, v2 } = await prepareRestore();
    const r = start(args('restore-point', 'restore', id, '--scope', 'both', '--yes'));
    // The lock is taken: the pre-restore capture of 8,000 changed files is under way.
    await until(() => lockFiles().length > 0, 'the target lock');
    r.proc.kill('SIGTERM');
    const res = await r.done;
    assert.equal(res.code, 1, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(`Interrupted: the restore of ${id} did not start; nothing in the target was changed`),
    );
    assert.deepEqual(describeTree(s.tree), v2);
    assert.equal(journalIds().length, 1, 'no pre-restore point recorded');
    assert.deepEqual(lockFiles(), []);
  });
});
