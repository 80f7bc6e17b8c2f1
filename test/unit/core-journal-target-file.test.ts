/**
 * The journal's target.json (sidecar/core/journal.ts ensure): it only names the target, so a damaged
 * one is written again instead of failing every create of that target with a bare JSON error.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { tempSetup } from './dir-fixtures';

describe('core: journal target.json', function () {
  this.timeout(20_000);
  let s: ReturnType<typeof tempSetup>;

  beforeEach(() => {
    s = tempSetup('ak-jtarget-');
    fs.writeFileSync(path.join(s.tree, 'a.txt'), 'a\n');
  });
  afterEach(() => s.cleanup());

  it('a damaged target.json is written again, and the create and the list go on', async () => {
    const first = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    const dir = path.join(s.state, 'journal');
    const [key] = fs.readdirSync(dir);
    const tf = path.join(dir, key, 'target.json');
    fs.writeFileSync(tf, '[');
    const core = new Core({ stateDir: s.state });
    const second = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.deepEqual(JSON.parse(fs.readFileSync(tf, 'utf8')), { target: s.target });
    const ids = (await core.listRestorePoints({ target: s.target })).map((r) => r.id);
    assert.deepEqual(ids.sort(), [first.id, second.id].sort());
  });
});
