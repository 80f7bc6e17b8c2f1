/**
 * The btrfs backend on a real btrfs filesystem (loop device made by the test, as root): create /
 * list / restore / delete, bytes coming back, O(1) creation, scope machine sparing agent memory,
 * diff / compare / readFile, and the clear errors (not a subvolume, not btrfs, mount point, missing,
 * btrfs-progs missing, permission denied).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { BtrfsBackend, compareTrees, SNAPSHOTS_DIR } from '../../sidecar/machine/btrfs';
import { compareBySend } from '../../sidecar/machine/btrfs/sendstream';
import { rng } from '../../bench/lib';
import { describeTree, makeHermesHome, put } from './dir-fixtures';
import { mountLoopBtrfs, type LoopBtrfs } from './helpers/btrfs';
import { buildSidecar, runSidecar, type RunResult } from './helpers/sidecar';
import type { RestorePoint } from '../../sidecar/protocol';

const read = (p: string): string => fs.readFileSync(p, 'utf8');
const isSubvolume = (p: string): boolean => {
  try {
    execFileSync('btrfs', ['subvolume', 'show', p], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

async function rejectsWith(p: Promise<unknown>, kind: string, msg: RegExp, hint: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof AgentKeepError, `AgentKeepError expected, got ${String(e)}`);
    assert.equal(e.kind, kind, e.oneLine());
    assert.match(e.message, msg);
    assert.match(e.hint ?? '', hint);
    return true;
  });
}

describe('btrfs backend (real btrfs on a loop device)', function () {
  this.timeout(60000);
  let fsx: LoopBtrfs;
  let state: string;
  let n = 0;
  /** A fresh subvolume per test, with a Core on a state dir outside the filesystem. */
  let sv: string;
  let target: string;
  let core: Core;

  before(() => {
    fsx = mountLoopBtrfs();
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-btrfs-state-'));
  });
  after(() => {
    fsx?.cleanup();
    if (state) fs.rmSync(state, { recursive: true, force: true });
  });
  beforeEach(() => {
    sv = fsx.subvolume(`agent${++n}`);
    target = `btrfs:${sv}`;
    core = new Core({ stateDir: path.join(state, `s${n}`) });
  });

  it('create / list / restore / delete: the bytes come back, the replaced state is a restore point', async () => {
    put(sv, 'workspace/package.json', '{"dependencies":{}}\n');
    put(sv, 'bin/run.sh', '#!/bin/sh\necho hi\n', 0o755);
    fs.symlinkSync('workspace/package.json', path.join(sv, 'link'));
    fs.writeFileSync(path.join(sv, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
    const before = describeTree(sv);
    const rp = await core.createRestorePoint({ target, label: 'clean', stores: [] });
    assert.equal(rp.machine.backend, 'btrfs');
    const snap = path.join(fsx.mnt, SNAPSHOTS_DIR, path.basename(sv), rp.id);
    assert.ok(isSubvolume(snap), 'a btrfs snapshot exists');
    assert.throws(() => fs.writeFileSync(path.join(snap, 'x'), 'x'), /EROFS|read-only/i, 'the snapshot is read-only');

    // the agent changes things
    fs.writeFileSync(path.join(sv, 'workspace/package.json'), '{"dependencies":{"left-pad":"1"}}\n');
    put(sv, 'workspace/node_modules/left-pad/index.js', 'x');
    fs.rmSync(path.join(sv, 'bin/run.sh'));
    fs.chmodSync(path.join(sv, 'big.bin'), 0o600);
    const diff = await core.diffRestorePoint({ target, id: rp.id });
    assert.deepEqual(diff.removed, ['bin/run.sh']);
    assert.ok(diff.added.includes('workspace/node_modules/left-pad/index.js'));
    assert.ok(diff.changed.includes('workspace/package.json') && diff.changed.includes('big.bin'));

    const res = await core.restoreRestorePoint({ target, id: rp.id, scope: 'both' });
    assert.deepEqual(describeTree(sv), before, 'tree identical to the snapshot: content, modes, links');
    assert.ok(isSubvolume(sv), 'the target is a subvolume again');
    assert.ok(res.changes.added.includes('workspace/node_modules'));
    assert.deepEqual(res.changes.removed, ['bin/run.sh']);
    // the replaced state is the undo restore point, a btrfs snapshot
    assert.equal(res.undo.kind, 'pre-restore');
    const undoSnap = path.join(fsx.mnt, SNAPSHOTS_DIR, path.basename(sv), res.undo.id);
    assert.equal(read(path.join(undoSnap, 'workspace/node_modules/left-pad/index.js')), 'x');
    // the replaced subvolume is deleted in the background
    const leftovers = (): string[] => fs.readdirSync(path.dirname(undoSnap)).filter((x) => x.startsWith('.'));
    for (let i = 0; i < 100 && leftovers().length; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(leftovers(), [], 'no temp subvolumes left behind');

    // undo brings the change back
    await core.restoreRestorePoint({ target, id: res.undo.id, scope: 'both' });
    assert.equal(read(path.join(sv, 'workspace/node_modules/left-pad/index.js')), 'x');
    assert.ok(!fs.existsSync(path.join(sv, 'bin/run.sh')));

    const list = await core.listRestorePoints({ target });
    assert.equal(list.length, 3);
    const del = await core.deleteRestorePoint({ target, id: rp.id });
    assert.equal(del.deleted, rp.id);
    assert.ok(!fs.existsSync(snap), 'snapshot subvolume deleted');
    assert.equal((await core.listRestorePoints({ target })).length, 2);
  });

  it('creation is O(1): a 20,000-file tree snapshots in well under a second', async () => {
    for (let d = 0; d < 100; d++) {
      const dir = path.join(sv, `d${d}`);
      fs.mkdirSync(dir);
      for (let f = 0; f < 200; f++) fs.writeFileSync(path.join(dir, `f${f}.txt`), `${d}/${f}\n`);
    }
    const t0 = Date.now();
    const rp = await core.createRestorePoint({ target, stores: [] });
    const ms = Date.now() - t0;
    assert.ok(ms < 1000, `create took ${ms} ms`);
    fs.rmSync(path.join(sv, 'd7'), { recursive: true });
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
    assert.equal(read(path.join(sv, 'd7/f199.txt')), '7/199\n');
    assert.equal(r.changes.removed.length, 201, 'd7 and its 200 files');
  });

  it('scope machine rolls the machine back and keeps the current agent memory (Hermes home inside)', async () => {
    const home = path.join(sv, '.hermes');
    makeHermesHome(home);
    put(sv, 'workspace/package.json', '{"dependencies":{}}\n');
    const rp = await core.createRestorePoint({ target }); // stores detected in the subvolume
    assert.deepEqual(
      rp.agent.map((a) => a.store),
      [`hermes:${home}`],
    );
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nInstalled left-pad.\n');
    put(home, 'skills/npm/left-pad/SKILL.md', 'new skill');
    fs.writeFileSync(path.join(sv, 'workspace/package.json'), '{"dependencies":{"left-pad":"1"}}\n');
    fs.writeFileSync(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: 9999\n');
    const memNow = read(path.join(home, 'memories/MEMORY.md'));

    const res = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
    assert.match(read(path.join(sv, 'workspace/package.json')), /"dependencies":\{\}/, 'machine rolled back');
    assert.match(read(path.join(home, 'config.yaml')), /2200/, 'config is machine state');
    assert.equal(read(path.join(home, 'memories/MEMORY.md')), memNow, 'memory kept');
    assert.equal(read(path.join(home, 'skills/npm/left-pad/SKILL.md')), 'new skill', 'new skill kept');
    assert.ok(!res.changes.changed.some((p) => p.includes('memories/')), 'agent paths not reported');

    // scope both afterwards puts the memory back too
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'both' });
    assert.doesNotMatch(read(path.join(home, 'memories/MEMORY.md')), /left-pad/);
    assert.ok(!fs.existsSync(path.join(home, 'skills/npm/left-pad')));
  });

  it('usage: btrfs filesystem du per snapshot and per target; prune --dry-run estimates the exclusive bytes', async () => {
    const MiB = 1024 * 1024;
    fs.writeFileSync(path.join(sv, 'one.bin'), randomBytes(MiB));
    const a = await core.createRestorePoint({ target, stores: [] });
    fs.rmSync(path.join(sv, 'one.bin'));
    fs.writeFileSync(path.join(sv, 'two.bin'), randomBytes(MiB));
    execFileSync('sync');
    const b = await core.createRestorePoint({ target, stores: [] });
    const u = await core.usageRestorePoints({ target });
    assert.deepEqual(
      u.points.map((p) => p.id),
      [b.id, a.id],
    );
    assert.equal(u.points[1].bytes, MiB, 'a holds one.bin');
    assert.equal(u.points[1].newBytes, MiB, 'one.bin is only in a');
    assert.equal(u.points[0].newBytes, 0, 'two.bin is shared with the live subvolume');
    assert.ok(u.metaBytes > 0, 'the journal counts too');
    assert.equal(u.bytes, 2 * MiB + u.metaBytes, 'both files once, plus the journal');
    assert.equal(u.level, 'ok');
    const dry = await core.pruneRestorePoints({ target, dryRun: true, keep: 1, minAgeMs: 0 });
    assert.deepEqual(
      dry.deleted.map((d) => d.id),
      [a.id],
    );
    assert.equal(dry.estimatedFreeBytes, MiB);
  });

  it('the send-stream compare equals a full stat walk of both snapshots (random changes, odd names)', async () => {
    const rand = rng(7);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
    const odd = ['sp ace', 'tab\tname', 'back\\slash', 'new\nline', 'ünï ☃', 'o1-2-3-ish', '-dash', 'a=b'];
    const dirs = ['', 'd1', 'd1/d2', 'd3', 'd3/sp ace dir'];
    for (const d of dirs) if (d) fs.mkdirSync(path.join(sv, d), { recursive: true });
    for (let i = 0; i < 60; i++) put(sv, `${pick(dirs) || '.'}/${i % 8 === 0 ? pick(odd) : `f${i}`}`, `c${i}\n`);
    fs.symlinkSync('d1', path.join(sv, 'ln'));
    const snaps: string[] = [];
    const snapOf = async (): Promise<string> => {
      const rp = await core.createRestorePoint({ target, stores: [] });
      snaps.push(rp.id);
      return path.join(fsx.mnt, SNAPSHOTS_DIR, path.basename(sv), rp.id);
    };
    let prev = await snapOf();
    const all = (): string[] => {
      const out: string[] = [];
      const walk = (rel: string): void => {
        for (const n of fs.readdirSync(path.join(sv, rel))) {
          const p = rel ? `${rel}/${n}` : n;
          out.push(p);
          if (fs.lstatSync(path.join(sv, p)).isDirectory()) walk(p);
        }
      };
      walk('');
      return out;
    };
    for (let round = 0; round < 6; round++) {
      for (let k = 0; k < 12; k++) {
        const paths = all();
        const p = pick(paths);
        const abs = path.join(sv, p);
        const st = fs.lstatSync(abs);
        const r = rand();
        if (r < 0.2 && st.isFile()) fs.appendFileSync(abs, 'more');
        else if (r < 0.3) fs.chmodSync(abs, st.isDirectory() ? 0o750 : 0o600);
        else if (r < 0.45) fs.rmSync(abs, { recursive: true, force: true });
        else if (r < 0.6)
          fs.renameSync(
            abs,
            path.join(
              sv,
              pick(dirs.filter((d) => !d.startsWith(p))) || '.',
              `moved-${round}-${k}${pick(['', ' x', '\t'])}`,
            ),
          );
        else if (r < 0.7 && st.isFile()) {
          fs.rmSync(abs);
          fs.mkdirSync(abs);
          put(abs, 'inner', 'now a dir');
        } else if (r < 0.8) put(sv, `${pick(dirs) || '.'}/${pick(odd)}-${round}-${k}`, 'new');
        else if (r < 0.9) fs.mkdirSync(path.join(sv, `nd-${round}-${k}`, 'deep'), { recursive: true });
        else if (st.isFile()) fs.utimesSync(abs, new Date(1e12 + k), new Date(1e12 + k));
        for (const d of dirs) if (d) fs.mkdirSync(path.join(sv, d), { recursive: true });
      }
      const next = await snapOf();
      const viaSend = await compareBySend(prev, next);
      const viaWalk = await compareTrees(prev, next);
      assert.deepEqual(viaSend, viaWalk, `round ${round}`);
      assert.ok(viaWalk.added.length + viaWalk.removed.length + viaWalk.changed.length > 0, 'something changed');
      // and across several rounds, and backwards
      assert.deepEqual(
        await compareBySend(next, path.join(path.dirname(next), snaps[0])),
        await compareTrees(next, path.join(path.dirname(next), snaps[0])),
        `round ${round} back to the first`,
      );
      prev = next;
    }
  });

  it('compare and readFile read the snapshots themselves', async () => {
    put(sv, 'a.txt', 'one\n');
    fs.symlinkSync('/etc', path.join(sv, 'esc'));
    const a = await core.createRestorePoint({ target, stores: [] });
    fs.writeFileSync(path.join(sv, 'a.txt'), 'two\n');
    put(sv, 'b.txt', 'new\n');
    const b = await core.createRestorePoint({ target, stores: [] });
    const c = await core.compareRestorePoints({ target, from: a.id, to: b.id });
    assert.deepEqual([c.added, c.changed, c.removed], [['b.txt'], ['a.txt'], []]);
    const same = await core.compareRestorePoints({ target, from: b.id, to: b.id });
    assert.deepEqual([same.added, same.changed, same.removed], [[], [], []]);
    const f = await core.readRestorePointFile({ target, id: a.id, path: 'a.txt' });
    assert.equal(f.content, 'one\n');
    assert.equal((await core.readRestorePointFile({ target, id: a.id, path: 'b.txt' })).type, 'none');
    assert.equal((await core.readRestorePointFile({ target, id: a.id, path: 'esc' })).content, '/etc');
    assert.equal(
      (await core.readRestorePointFile({ target, id: a.id, path: 'esc/passwd' })).type,
      'none',
      'never follows a symlink out',
    );
  });

  it('errors: plain directory, not btrfs, mount point, missing, btrfs-progs missing, permission denied', async () => {
    const plain = path.join(fsx.mnt, `plain${n}`);
    fs.mkdirSync(plain);
    await rejectsWith(
      core.createRestorePoint({ target: `btrfs:${plain}` }),
      'BadTarget',
      /plain directory on btrfs, not a subvolume/,
      /btrfs subvolume create/,
    );
    const notBtrfs = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-notbtrfs-'));
    try {
      await rejectsWith(
        core.createRestorePoint({ target: `btrfs:${notBtrfs}` }),
        'BadTarget',
        /not on a btrfs filesystem/,
        new RegExp(`dir:${notBtrfs}`),
      );
    } finally {
      fs.rmSync(notBtrfs, { recursive: true, force: true });
    }
    await rejectsWith(
      core.createRestorePoint({ target: `btrfs:${fsx.mnt}` }),
      'BadTarget',
      /mount point/,
      /subvolid=5/,
    );
    await rejectsWith(
      core.createRestorePoint({ target: `btrfs:${sv}-missing` }),
      'TargetNotFound',
      /does not exist/,
      /btrfs subvolume create/,
    );

    // btrfs-progs missing: a PATH without the btrfs command
    const emptyBin = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-nobin-'));
    const oldPath = process.env.PATH;
    try {
      process.env.PATH = emptyBin;
      await rejectsWith(
        core.createRestorePoint({ target, stores: [] }),
        'Unsupported',
        /btrfs-progs\) is not installed/,
        /apt install btrfs-progs/,
      );
      // permission denied: the real btrfs run as user nobody (no CAP_SYS_ADMIN, not the owner)
      fs.writeFileSync(
        path.join(emptyBin, 'btrfs'),
        `#!/bin/sh\nexec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups ${execFileSync('sh', ['-c', 'command -v btrfs'], { env: { PATH: oldPath }, encoding: 'utf8' }).trim()} "$@"\n`,
        { mode: 0o755 },
      );
      process.env.PATH = `${emptyBin}:${oldPath}`;
      await rejectsWith(
        core.createRestorePoint({ target, stores: [] }),
        'FileError',
        /permission denied/i,
        /root.*CAP_SYS_ADMIN.*user_subvol_rm_allowed/,
      );
    } finally {
      process.env.PATH = oldPath;
      fs.rmSync(emptyBin, { recursive: true, force: true });
    }
    assert.deepEqual(await core.listRestorePoints({ target }), [], 'no restore point recorded by the failures');
  });

  it('through the real CLI: create, list, restore, usage; errors are one line with the fix', async function () {
    this.timeout(120000);
    await buildSidecar();
    const st = path.join(state, `cli${n}`);
    const ak = (...args: string[]): Promise<RunResult> => runSidecar(['--state-dir', st, ...args]);
    put(sv, 'app/main.py', 'print(1)\n');
    const c = await ak('restore-point', 'create', '--target', target, '--label', 'before install', '--kind', 'update');
    assert.equal(c.code, 0, c.stderr);
    assert.match(
      c.stdout,
      /^Created restore point (ak_\w+) "before install": btrfs snapshot \.agentkeep-snapshots\/agent\d+\/ak_\w+ in \d+ ms/,
    );
    const id = /ak_\w+/.exec(c.stdout)![0];
    put(sv, 'app/venv/lib/x.py', 'installed');
    const list = JSON.parse((await ak('restore-point', 'list', '--target', target, '--json')).stdout) as RestorePoint[];
    assert.deepEqual(
      list.map((r) => [r.id, r.kind, r.machine.backend]),
      [[id, 'update', 'btrfs']],
    );
    const r = await ak('restore-point', 'restore', id, '--target', target, '--scope', 'machine', '--yes');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Restored ak_\w+ "before install"/);
    assert.ok(!fs.existsSync(path.join(sv, 'app/venv')), 'rolled back');
    const u = JSON.parse((await ak('restore-point', 'usage', '--target', target, '--json')).stdout);
    assert.equal(u.points.length, 2);
    assert.equal(u.level, 'ok');
    const plain = path.join(fsx.mnt, `plaincli${n}`);
    fs.mkdirSync(plain);
    const bad = await ak('restore-point', 'create', '--target', `btrfs:${plain}`);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.trimEnd().split('\n').length, 1, bad.stderr);
    assert.match(
      bad.stderr,
      /^agentkeep: .* is a plain directory on btrfs, not a subvolume\. Make it a subvolume: .*btrfs subvolume create/,
    );
  });

  it('a rollback that fails before the swap changes nothing and leaves no temp subvolume', async () => {
    put(sv, 'a.txt', 'old');
    const rp = await core.createRestorePoint({ target, stores: [] });
    fs.writeFileSync(path.join(sv, 'a.txt'), 'new');
    const snapDir = path.join(fsx.mnt, SNAPSHOTS_DIR, path.basename(sv));
    // the pre-restore snapshot works; then the snapshot dir turns immutable, so the writable copy fails
    const realCreate = BtrfsBackend.prototype.create;
    BtrfsBackend.prototype.create = async function (this: BtrfsBackend, ...args: Parameters<BtrfsBackend['create']>) {
      const r = await realCreate.apply(this, args);
      execFileSync('chattr', ['+i', snapDir]);
      return r;
    };
    try {
      await assert.rejects(core.restoreRestorePoint({ target, id: rp.id, scope: 'both' }), (e: unknown) => {
        assert.ok(e instanceof AgentKeepError);
        assert.match(
          e.message,
          /Restore of ak_\w+ stopped: .*permission denied.*The state before the restore was saved as restore point/i,
        );
        return true;
      });
    } finally {
      BtrfsBackend.prototype.create = realCreate;
      execFileSync('chattr', ['-i', snapDir]);
    }
    assert.equal(read(path.join(sv, 'a.txt')), 'new', 'live subvolume untouched');
    assert.ok(isSubvolume(sv));
    assert.deepEqual(
      fs.readdirSync(snapDir).filter((x) => x.startsWith('.')),
      [],
      'no .restore-* left',
    );
  });

  it('an interrupted rollback (live subvolume renamed away) is named with the command to undo it', async () => {
    put(sv, 'a.txt', '1');
    await core.createRestorePoint({ target, stores: [] });
    const away = path.join(fsx.mnt, SNAPSHOTS_DIR, path.basename(sv), '.replaced-0123456789ab');
    fs.renameSync(sv, away);
    await rejectsWith(
      core.createRestorePoint({ target, stores: [] }),
      'TargetNotFound',
      /interrupted rollback left/,
      new RegExp(`mv ${away} ${sv}`),
    );
    fs.renameSync(away, sv);
  });
});
