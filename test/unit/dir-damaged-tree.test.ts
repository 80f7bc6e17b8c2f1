/**
 * A tree object of the parent snapshot damaged inside its pack (the bytes no longer match the
 * sha256): the next create reads it (its stat cache), cannot use it, and makes that directory's tree
 * again from the walk, which hashes to the same name. Stored only by name, the new restore point
 * named the damaged copy and could not be restored (found by QA, session 21); the object is now
 * stored again as a file of its own, which reads take before the packs. Both creates a one-shot CLI
 * makes: the streamed walk and the in-memory one.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { describeTree, put, tempSetup } from './dir-fixtures';

describe('dir backend: a damaged tree of the parent is not named by the next restore point', function () {
  this.timeout(120_000);
  before(() => buildSidecar());
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-dmgtree-');
    for (let i = 1; i <= 20; i++) {
      put(s.tree, `a/fa${i}.txt`, `a ${i}\n`);
      put(s.tree, `b/fb${i}.txt`, `b ${i}\n`);
    }
  });
  afterEach(() => s.cleanup());

  for (const stream of ['1', '0']) {
    it(`AGENTKEEP_DIR_STREAM=${stream}: the create stores the tree again and its restore point restores`, async () => {
      const env = { AGENTKEEP_DIR_STREAM: stream };
      const cli = async (...args: string[]) => {
        const r = await runSidecar(['--state-dir', s.state, ...args, '--json'], env);
        return { ...r, json: r.code === 0 ? JSON.parse(r.stdout) : undefined };
      };
      assert.equal((await cli('restore-point', 'create', '--target', s.target)).code, 0);
      // flip one byte of a name inside the tree of a/ (it is in the create's pack)
      const packDir = path.join(s.state, 'objects', 'pack');
      let damaged = 0;
      for (const name of fs.readdirSync(packDir).filter((n) => n.endsWith('.pack'))) {
        const p = path.join(packDir, name);
        const b = fs.readFileSync(p);
        const i = b.indexOf('"fa7.txt"');
        if (i < 0) continue;
        b[i + 1] ^= 0x20;
        fs.chmodSync(p, 0o600);
        fs.writeFileSync(p, b);
        fs.chmodSync(p, 0o400);
        damaged++;
      }
      assert.equal(damaged, 1, 'the tree of a/ is in one pack');
      fs.appendFileSync(path.join(s.tree, 'b/fb3.txt'), 'changed\n');
      const second = await cli('restore-point', 'create', '--target', s.target);
      assert.equal(second.code, 0, second.stderr);
      const want = describeTree(s.tree);
      fs.appendFileSync(path.join(s.tree, 'a/fa1.txt'), 'x\n');
      fs.rmSync(path.join(s.tree, 'b/fb9.txt'));
      const r = await cli(
        'restore-point',
        'restore',
        second.json.id,
        '--target',
        s.target,
        '--scope',
        'machine',
        '--yes',
      );
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(describeTree(s.tree), want);
    });
  }
});
