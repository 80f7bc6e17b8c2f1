/**
 * Issue 13 #7: a restore point never widens who can read a file. The state dir is made 0700 (an
 * existing 0755 one too), objects are 0400 and manifests/journal entries 0600, checked by reading
 * them as a second user (nobody, through setpriv); a state dir of another user is refused.
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { put, tempSetup } from './dir-fixtures';
import { expectAgentKeepError } from './helpers/errors';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { AS_NOBODY, NOBODY, runAsNobody } from './helpers/tmpfs';
import { looseObjects } from './helpers/loose';

const mode = (p: string): number => fs.statSync(p).mode & 0o777;
const SECRET = 'OPENROUTER_API_KEY=sk-not-a-real-key\n';

describe('permissions of the state dir (issue 13 #7, a second user reads)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  before(() => buildSidecar());
  beforeEach(() => {
    s = tempSetup('ak-perms-');
    fs.chmodSync(s.base, 0o755); // only the state dir's own modes stand between nobody and the files
    put(s.tree, '.env', SECRET, 0o600);
    put(s.tree, 'README.md', 'public\n', 0o644);
  });
  afterEach(() => s.cleanup());

  describe('(object files of their own)', () => {
    looseObjects();
    it('an existing 0755 state dir is made 0700; objects 0400, manifests and journal 0600; nobody reads none of it', async () => {
      fs.mkdirSync(s.state, { mode: 0o755 });
      fs.chmodSync(s.state, 0o755); // as `mkdir` or an admin makes /var/lib/agentkeep
      assert.equal(runAsNobody('ls', [s.state]).code, 0, 'nobody can list it before');
      const rp = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      assert.equal(mode(s.state), 0o700);
      const hash = createHash('sha256').update(SECRET).digest('hex');
      const obj = path.join(s.state, 'objects', hash.slice(0, 2), hash);
      assert.equal(fs.readFileSync(obj, 'utf8'), SECRET);
      assert.equal(mode(obj), 0o400);
      const [key] = fs.readdirSync(path.join(s.state, 'journal'));
      const manifest = path.join(s.state, 'dir', key, `${rp.id}.json`);
      const entry = path.join(s.state, 'journal', key, `${rp.id}.json`);
      assert.equal(mode(manifest), 0o600);
      assert.equal(mode(entry), 0o600);
      for (const p of [s.state, obj, manifest, entry]) {
        const r = runAsNobody(p === s.state ? 'ls' : 'cat', [p]);
        assert.notEqual(r.code, 0, `nobody must not read ${p}`);
        assert.match(r.out, /Permission denied/);
        assert.ok(!r.out.includes('sk-not-a-real-key'));
      }
      // Even if someone opens the state dir up again, the files themselves stay the owner's.
      fs.chmodSync(s.state, 0o755);
      for (const d of ['objects', path.join('objects', hash.slice(0, 2)), 'dir', path.join('dir', key)])
        fs.chmodSync(path.join(s.state, d), 0o755);
      for (const p of [obj, manifest]) assert.match(runAsNobody('cat', [p]).out, /Permission denied/);
      // ...and the next operation narrows the state dir again
      await new Core({ stateDir: s.state }).listRestorePoints({ target: s.target });
      await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      assert.equal(mode(s.state), 0o700);
    });
  });

  it('a new state dir is created 0700, with its parents', async () => {
    const deep = path.join(s.base, 'var', 'lib', 'agentkeep');
    await new Core({ stateDir: deep }).createRestorePoint({ target: s.target, stores: [] });
    assert.equal(mode(deep), 0o700);
  });

  it('a state dir owned by another user is refused with the fix (as root and as nobody)', async () => {
    fs.mkdirSync(s.state, { mode: 0o700 });
    fs.chownSync(s.state, NOBODY, NOBODY);
    const e = await expectAgentKeepError(
      new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] }),
      'BadStateDir',
      /belongs to uid 65534, not to this user \(uid 0\)/,
    );
    assert.match(e.hint ?? '', /chown -R 0 .*chmod 700|--state-dir/);
    assert.deepEqual(fs.readdirSync(s.state), [], 'nothing written into it');
    // nobody, with a world-writable state dir of root's (e.g. a shared /tmp folder)
    const shared = path.join(s.base, 'shared');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o777);
    fs.chmodSync(s.tree, 0o755);
    fs.chmodSync(path.join(s.tree, '.env'), 0o644);
    const r = await runSidecar(
      ['--state-dir', shared, 'restore-point', 'create', '--target', s.target, '--json'],
      {},
      undefined,
      AS_NOBODY,
    );
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const err = JSON.parse(r.stdout || r.stderr).error;
    assert.equal(err.code, 'bad_state_dir');
    assert.match(err.message, /belongs to uid 0, not to this user \(uid 65534\)/);
    assert.deepEqual(fs.readdirSync(shared), []);
  });
});
