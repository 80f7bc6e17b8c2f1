/**
 * Edge cases of the dir backend and core on real trees: names that are not UTF-8, our own temp files
 * inside the target, FIFOs/sockets counted as skipped, temp objects of dead writers, symlinked
 * spellings of one target, dir:// URL forms, Hermes homes found without --store, scope agent
 * without a capture.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { fixText } from './helpers/errors';
import { acquireLock } from '../../sidecar/core/lock';
import { TEMP_MAX_AGE_MS } from '../../sidecar/core/objects';
import { parseTarget, resolveTarget } from '../../sidecar/core/target';
import { scanTree } from '../../sidecar/machine/dir/scan';
import { describeTree, makeHermesHome, put, tempLeftovers, tempSetup } from './dir-fixtures';

const isErr =
  (kind: string, re?: RegExp, hintRe?: RegExp) =>
  (e: AgentKeepError): boolean => {
    assert.ok(e instanceof AgentKeepError, `not an AgentKeepError: ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    if (re) assert.match(e.message, re);
    if (hintRe) assert.match(fixText(e), hintRe); // hint and next actions, as the CLI prints them
    return true;
  };

/** Whether this file system keeps non-UTF-8 names (most Linux ones do; some macOS ones refuse them). */
function canMakeLatin1Name(dir: string): boolean {
  try {
    fs.writeFileSync(Buffer.from(path.join(dir, 'probe-\xe9'), 'latin1'), 'x');
    fs.rmSync(Buffer.from(path.join(dir, 'probe-\xe9'), 'latin1'));
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('dir backend: edge cases', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
  });
  afterEach(() => s.cleanup());

  it('a name that is not UTF-8 fails create with the directory, the escaped name and the fix (never skipped)', async function () {
    put(s.tree, 't4/ok.txt', 'fine');
    assert.ok(
      canMakeLatin1Name(path.join(s.tree, 't4')),
      'the test file system accepts non-UTF-8 names (ext4, tmpfs and btrfs do)',
    );
    fs.writeFileSync(
      Buffer.concat([
        Buffer.from(path.join(s.tree, 't4') + '/'),
        Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]),
      ]),
      'x',
    );
    await assert.rejects(
      core.createRestorePoint({ target: s.target }),
      isErr(
        'FileError',
        new RegExp(`${path.join(s.tree, 't4').replace(/[/.]/g, '\\$&')}.*\\$'caf\\\\xe9\\.txt'.*not valid UTF-8`),
        /Rename it.*mv .*caf\\xe9\.txt/,
      ),
    );
    assert.deepEqual(await core.listRestorePoints({ target: s.target }), [], 'no restore point recorded');
  });

  it('a name holding a real U+FFFD is fine', async () => {
    put(s.tree, 'a\uFFFDb.txt', 'replacement char is valid UTF-8');
    const rp = await core.createRestorePoint({ target: s.target });
    assert.equal(rp.machine.files, 1);
  });

  it('never captures our temp files and a restore removes stray ones', async () => {
    put(s.tree, 'a/data.txt', 'v1');
    const rp1 = await core.createRestorePoint({ target: s.target });
    // What an interrupted restore leaves: `.<name>.ak-tmp-<12 hex>` next to the file.
    put(s.tree, 'a/.data.txt.ak-tmp-0123456789ab', 'partial');
    put(s.tree, '.top.ak-tmp-abcdefabcdef', 'partial');
    put(s.tree, 'a/not-ours.ak-tmp-0123456789ab', 'a user file that only looks similar');
    const rp2 = await core.createRestorePoint({ target: s.target });
    assert.equal(rp2.machine.files, rp1.machine.files + 1, 'only the look-alike user file is new');
    const d = await core.diffRestorePoint({ target: s.target, id: rp1.id });
    assert.deepEqual(d.added, ['a/not-ours.ak-tmp-0123456789ab']);
    await core.restoreRestorePoint({ target: s.target, id: rp1.id, scope: 'machine' });
    assert.deepEqual(tempLeftovers(s.tree), []);
    assert.deepEqual(Object.keys(describeTree(s.tree)).sort(), ['a', 'a/data.txt']);
  });

  it('temp files a killed restore left are still seen and removed after later creates reuse the listing', async () => {
    put(s.tree, 'keep.txt', 'k');
    const p0 = await core.createRestorePoint({ target: s.target });
    // what SIGKILL in the middle of a restore leaves: a new directory holding only our temp file
    put(s.tree, 'X/.f.ak-tmp-0123456789ab', 'partial');
    await sleep(150); // older than the racy window: later scans may reuse X's listing
    await core.createRestorePoint({ target: s.target });
    await core.createRestorePoint({ target: s.target });
    const r = await core.restoreRestorePoint({ target: s.target, id: p0.id, scope: 'both' });
    assert.deepEqual(tempLeftovers(s.tree), [], 'the temp file is removed');
    assert.deepEqual(Object.keys(describeTree(s.tree)).sort(), ['keep.txt']);
    assert.deepEqual(r.changes.added, ['X']);
  });

  it('FIFOs and sockets are not captured and are counted as skipped', async () => {
    put(s.tree, 'f.txt', 'x');
    execFileSync('mkfifo', [path.join(s.tree, 'pipe')]);
    const sock = path.join(s.tree, 'sock');
    const server = net.createServer().listen(sock);
    await new Promise((r) => server.once('listening', r));
    try {
      const rp = await core.createRestorePoint({ target: s.target });
      assert.equal(rp.machine.files, 1);
      assert.equal(rp.machine.skipped, 2);
    } finally {
      server.close();
    }
    fs.rmSync(sock, { force: true });
    fs.rmSync(path.join(s.tree, 'pipe'));
    const rp = await core.createRestorePoint({ target: s.target });
    assert.equal(rp.machine.skipped, undefined, 'absent when nothing was skipped');
  });

  it('an entry is skipped as vanished only when its directory no longer lists it', async () => {
    for (let i = 0; i < 50; i++) put(s.tree, `d/f${i}.txt`, `c${i}`);
    // Files deleted while being hashed: gone from the listing, so skipped; the rest is captured.
    let deleted = 0;
    const r = await scanTree(s.tree, {
      hashFile: async (abs) => {
        if (/f1\d\.txt$/.test(abs)) {
          fs.rmSync(abs);
          deleted++;
        }
        const buf = fs.readFileSync(abs);
        return { hash: 'x'.repeat(64), newBytes: buf.length };
      },
    });
    assert.equal(deleted, 10);
    assert.equal(r.entries.filter((e) => e.t === 'f').length, 40);
    // A file that fails with ENOENT while still listed is an error, not a silent skip.
    await assert.rejects(
      scanTree(s.tree, {
        hashFile: async (abs) => {
          if (abs.endsWith('f3.txt')) throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
          return { hash: 'x'.repeat(64), newBytes: 0 };
        },
      }),
      isErr('FileError', /f3\.txt/),
    );
  });

  it('temp objects of dead writers are swept at the start of create; live and recent ones are kept', async () => {
    put(s.tree, 'x.txt', 'x');
    await core.createRestorePoint({ target: s.target });
    const tmp = path.join(s.state, 'objects', 'tmp');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    fs.writeFileSync(path.join(tmp, `${dead}-0123456789ab`), Buffer.alloc(4096));
    fs.writeFileSync(path.join(tmp, `1700000000000-0123456789ab`), 'old-format name');
    const live = path.join(tmp, `${process.pid}-abcdefabcdef`);
    fs.writeFileSync(live, 'a live writer');
    const ancient = path.join(tmp, `${process.pid}-aaaaaaaaaaaa`);
    fs.writeFileSync(ancient, 'live pid but older than 24 h');
    const t = new Date(Date.now() - TEMP_MAX_AGE_MS - 60_000);
    fs.utimesSync(ancient, t, t);
    await core.createRestorePoint({ target: s.target });
    assert.deepEqual(fs.readdirSync(tmp), [path.basename(live)]);
  });

  it('a symlinked spelling of the target shares its key, lock and journal', async () => {
    put(s.tree, 'x.txt', 'x');
    const link = path.join(s.base, 'link');
    fs.symlinkSync(s.tree, link);
    const a = await resolveTarget(s.target);
    const b = await resolveTarget(`dir:${link}`);
    assert.equal(a.key, b.key);
    assert.equal(b.spec, `dir:${link}`, 'the spec stays as given');
    const rp = await core.createRestorePoint({ target: `dir:${link}` });
    assert.deepEqual(
      (await core.listRestorePoints({ target: s.target })).map((r) => r.id),
      [rp.id],
    );
    // The lock taken through one spelling blocks the other.
    const lock = await acquireLock(path.join(s.state, 'locks', `${a.key}.lock`), {
      op: 'test',
      what: 'x',
      timeoutMs: 1000,
    });
    try {
      await assert.rejects(
        new Core({ stateDir: s.state, lockTimeoutMs: 200 }).createRestorePoint({ target: `dir:${link}` }),
        isErr('TargetBusy'),
      );
    } finally {
      await lock.release();
    }
  });

  it('dir:///abs and dir://localhost/abs are absolute paths; dir://host/x names the fix', () => {
    assert.equal(parseTarget('dir:///tmp/x').path, '/tmp/x');
    assert.equal(parseTarget('dir://localhost/tmp/x').spec, 'dir:/tmp/x');
    assert.throws(
      () => parseTarget('dir://tmp/x'),
      isErr('BadTarget', /takes a local path, not a host/, /dir:\/tmp\/x/),
    );
    assert.throws(() => parseTarget('dir://'), isErr('BadTarget', /empty path/));
  });
});

describe('core: Hermes homes found without --store', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
  });
  afterEach(() => s.cleanup());

  it('create captures target/.hermes and its profiles; --scope machine then keeps memory', async () => {
    const home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    makeHermesHome(path.join(home, 'profiles', 'work'));
    fs.mkdirSync(path.join(home, 'profiles', 'not-a-home'), { recursive: true });
    put(s.tree, 'workspace/a.txt', 'v1');
    const rp = await core.createRestorePoint({ target: s.target });
    assert.deepEqual(
      rp.agent.map((a) => a.store),
      [`hermes:${home}`, `hermes:${path.join(home, 'profiles', 'work')}`],
    );
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nlearned\n');
    const mem = fs.readFileSync(path.join(home, 'memories/MEMORY.md'), 'utf8');
    fs.writeFileSync(path.join(s.tree, 'workspace/a.txt'), 'v2');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'workspace/a.txt'), 'utf8'), 'v1');
    assert.equal(fs.readFileSync(path.join(home, 'memories/MEMORY.md'), 'utf8'), mem, 'memory not rolled back');
  });

  it('--scope machine reports only what it removed: a folder kept for new agent state is not listed', async () => {
    const home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    const rp = await core.createRestorePoint({ target: s.target });
    put(home, 'skills/new-skill/SKILL.md', '---\nname: new-skill\n---\nbody\n');
    put(s.tree, 'workspace/tmp/new.txt', 'gone after the restore');
    const r = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.ok(fs.existsSync(path.join(home, 'skills/new-skill/SKILL.md')), 'agent state kept');
    assert.ok(!fs.existsSync(path.join(s.tree, 'workspace')), 'machine state rolled back');
    for (const p of r.changes.added)
      assert.ok(!fs.existsSync(path.join(s.tree, p)), `reported as removed but still there: ${p}`);
    assert.ok(r.changes.added.includes('workspace/tmp/new.txt'));
  });

  it('the target itself as a Hermes home is found; a plain config.yaml is not enough', async () => {
    makeHermesHome(s.tree);
    const rp = await core.createRestorePoint({ target: s.target });
    assert.deepEqual(
      rp.agent.map((a) => a.store),
      [`hermes:${s.tree}`],
    );
    const other = tempSetup();
    try {
      put(other.tree, 'config.yaml', 'a: 1\n');
      const rp2 = await new Core({ stateDir: other.state }).createRestorePoint({ target: other.target });
      assert.deepEqual(rp2.agent, []);
    } finally {
      other.cleanup();
    }
  });

  it('restore --scope agent of a restore point without agent capture fails before a pre-restore point', async () => {
    put(s.tree, 'a.txt', 'x');
    const rp = await core.createRestorePoint({ target: s.target });
    assert.deepEqual(rp.agent, []);
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent' }),
      isErr('BadStore', /no agent-state capture/, /--scope machine/),
    );
    assert.equal((await core.listRestorePoints({ target: s.target })).length, 1, 'no pre-restore point taken');
  });
});
