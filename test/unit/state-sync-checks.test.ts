/**
 * The first steps of every create and restore on an existing state dir (issue 14, the 1,000-file
 * restore): checking the state dir, resolving the paths, the temp-object sweep and the GC handshake's
 * "collection due?" look are synchronous calls, not thread-pool round trips (each of those cost more
 * than the call), and they still refuse what they refused.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gcPending } from '../../sidecar/core/gc';
import { ObjectStore } from '../../sidecar/core/objects';
import { StateLayout, ensureStateDir, realpathLoose } from '../../sidecar/core/state';

describe('state dir checks of every operation: synchronous', () => {
  let base: string;
  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-statesync-'));
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('an existing state dir is checked, its paths resolved and its temps swept without an asynchronous fs call', async () => {
    const layout = new StateLayout(path.join(base, 'state'));
    await ensureStateDir(layout); // (the first time makes it)
    const objects = new ObjectStore(layout.objectsDir);
    await objects.init();
    const calls: string[] = [];
    const p = fs.promises as unknown as Record<string, (...a: unknown[]) => unknown>;
    const saved = new Map<string, (...a: unknown[]) => unknown>();
    for (const k of ['mkdir', 'stat', 'lstat', 'access', 'realpath', 'readdir', 'chmod', 'statfs', 'writeFile']) {
      saved.set(k, p[k]);
      p[k] = (...a: unknown[]) => {
        calls.push(k);
        return (saved.get(k) as (...x: unknown[]) => unknown)(...a);
      };
    }
    try {
      await realpathLoose(path.join(base, 'state'));
      await ensureStateDir(layout);
      await objects.init();
      await objects.sweepTemps();
      assert.equal(await gcPending(layout), false);
    } finally {
      for (const [k, f] of saved) p[k] = f;
    }
    assert.deepEqual(calls, []);
  });

  it('still makes a state dir private and refuses one that is a file', async () => {
    const root = path.join(base, 'wide');
    fs.mkdirSync(root, { mode: 0o755 });
    fs.chmodSync(root, 0o755);
    await ensureStateDir(new StateLayout(root));
    assert.equal(fs.statSync(root).mode & 0o777, 0o700);
    const file = path.join(base, 'file');
    fs.writeFileSync(file, 'x');
    await assert.rejects(ensureStateDir(new StateLayout(file)), /is a file, not a directory|not usable/);
    assert.equal(
      await realpathLoose(path.join(base, 'missing', 'deeper')),
      path.join(fs.realpathSync(base), 'missing', 'deeper'),
    );
  });
});
