/**
 * The extension and the memory inspector show a broken store as broken, never as "0 entries" or ok
 * (issue 13 #5): the Agent view's store and file rows (extension/storeView.ts), the status bar lines,
 * the inspector's file headers, write buttons, provenance and empty-list text (webview-ui/memory/
 * logic.ts), and the restore confirmation's memory lines (extension/format.ts). The inputs are what
 * the real core answers for a real Hermes home with MEMORY.md made a directory and a damaged
 * state.db (no vscode: the pure parts the views are built from).
 */
import * as assert from 'node:assert/strict';
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describeMemoryLoss } from '../../extension/format';
import {
  brokenFileRows,
  brokenStoreLines,
  entryContextValue,
  memoryFileView,
  storeItemView,
} from '../../extension/storeView';
import { agentItemView } from '../../extension/targetView';
import { Core } from '../../sidecar/core/core';
import type { MemoryFile } from '../../sidecar/protocol';
import {
  emptyListText,
  fileMeta,
  fileWarnings,
  provenanceUnavailable,
  writeBlockReason,
} from '../../webview-ui/memory/logic';
import { damagePages } from './helpers/damage';
import { copyFixture } from './helpers/hermes-db';
import { FIXTURES, REPO } from './helpers/paths';

describe('extension: broken stores shown as broken (real core answers)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  let store: string;
  let core: Core;
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');
  const fileOf = async (kind: string): Promise<MemoryFile> =>
    (await core.listMemory({ stores: [store] })).stores.find((f) => f.kind === kind)!;

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join('/var/tmp', 'ak-ext-broken-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home);
    store = `hermes:${home}`;
    core = new Core({ stateDir: path.join(tmp, 'state') });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  async function breakMemory(): Promise<void> {
    await fs.rm(mem());
    await fs.mkdir(mem());
    await fs.writeFile(path.join(mem(), 'stray.txt'), 'x');
  }

  it('Agent view file row: intact shows count and usage; broken shows "broken: …", no count', async () => {
    const ok = memoryFileView(await fileOf('hermes-memory'));
    assert.match(ok.description, /^\d+\/2200 chars · \d+ entries$/);
    assert.equal(ok.icon, 'file-text');
    assert.equal(ok.contextValue, 'memoryFile');

    await breakMemory();
    const f = await fileOf('hermes-memory');
    const v = memoryFileView(f);
    assert.equal(v.label, 'MEMORY.md');
    assert.equal(v.icon, 'error');
    assert.equal(v.contextValue, 'memoryFile.broken');
    assert.match(v.description, /^broken: MEMORY\.md is a directory, not a file/, 'the path shortened to the name');
    assert.doesNotMatch(v.description, /\d+ entr|chars/, 'no "0 entries", no usage');
    assert.match(v.tooltip, /\nFix: Move it away \(mv /);
    assert.match(v.tooltip, /Its entries are unknown \(not empty\)\. AgentKeep does not write this file\./);

    const rows = brokenFileRows(f);
    assert.deepEqual(
      rows.map((r) => r.icon),
      ['error', 'lightbulb'],
    );
    assert.match(rows[0].label, /^Entries unknown: MEMORY\.md is a directory/);
    assert.match(rows[1].label, /^Fix: Move it away/);
    assert.deepEqual(brokenFileRows(await fileOf('hermes-user')), [], 'USER.md is not broken');
  });

  it('entries of a broken file offer no edit or delete (context value); intact and read-only ones as before', () => {
    const broken = { code: 'file_error', message: 'x is damaged.' };
    assert.equal(entryContextValue({}), 'memoryEntry');
    assert.equal(entryContextValue({ readOnly: 'SOUL.md is written by hand' }), 'memoryEntry.readOnly');
    assert.equal(entryContextValue({ broken }), 'memoryEntry.broken');
    assert.equal(entryContextValue({ broken, readOnly: 'r' }), 'memoryEntry.broken');
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    const menus: Array<{ command: string; when: string }> = pkg.contributes.menus['view/item/context'];
    for (const cmd of ['agentkeep.editMemoryEntry', 'agentkeep.deleteMemoryEntry']) {
      const whens = menus.filter((m) => m.command === cmd).map((m) => m.when);
      assert.ok(whens.length, cmd);
      for (const w of whens) assert.match(w, /viewItem == memoryEntry$/, `${cmd} only on editable entries: ${w}`);
    }
  });

  it('store row and status bar: agent.status broken parts give a warning badge, what and the fix', async () => {
    await breakMemory();
    await damagePages(path.join(home, 'state.db'), 3, 7);
    const st = (await core.agentStatus({ target: `dir:${tmp}`, stores: [store] })).stores[0];
    const v = storeItemView(store, st.description, 0, undefined, st);
    assert.equal(v.icon, 'warning');
    assert.match(v.description, /^broken · /);
    assert.match(v.tooltip, /\nBroken: .*MEMORY\.md is a directory, not a file.*\nFix: Move it away/);
    assert.match(v.tooltip, /\nBroken: SQLite database .*state\.db is damaged.*\nFix: Stop the agent/);
    const status = await core.agentStatus({ target: `dir:${tmp}`, stores: [store] });
    const agent = agentItemView(`dir:${tmp}`, status.description, status);
    assert.equal(agent.icon, 'warning', 'the agent row warns too');
    assert.match(agent.description, /^memory broken · reachable/);
    assert.match(agent.tooltip, /Store `hermes:.*`: \$\(warning\) broken: /);
    const lines = brokenStoreLines([st]);
    assert.equal(lines.length, 1);
    assert.match(lines[0], /^Store hermes:.* is broken: .*MEMORY\.md is a directory.* \(and 1 more\) Fix: Move it/);

    const okStatus = (await core.agentStatus({ target: `dir:${tmp}`, stores: [`hermes:${FIXTURES}/memory/hermes`] }))
      .stores[0];
    assert.equal(storeItemView(okStatus.store, okStatus.description, 0, undefined, okStatus).icon, 'database');
    assert.deepEqual(brokenStoreLines([okStatus]), []);
  });

  it('inspector: broken header (no count, no usage), writes blocked with the fix, not "no entries yet"', async () => {
    await breakMemory();
    const f = await fileOf('hermes-memory');
    assert.equal(fileMeta(f), 'BROKEN (entries unknown; writes refused)');
    assert.deepEqual(fileWarnings(f), [], 'the broken message is said once, not again as a warning');
    const block = writeBlockReason(f, true);
    assert.match(block ?? '', /^This file is broken, so AgentKeep does not write it: .*is a directory.* Fix: Move it/);
    assert.match(writeBlockReason(f, false) ?? '', /^Restricted Mode/);
    const user = await fileOf('hermes-user');
    assert.equal(writeBlockReason(user, true), undefined, 'USER.md stays editable');
    assert.match(fileMeta(user), /^\d+\/1375 chars · \d+ entr/);
    const partial = { ...f, entries: user.entries.slice(0, 1) };
    assert.equal(fileMeta(partial), 'BROKEN (1 entry readable; writes refused)');

    // every memory file broken: the list says so instead of "hold no memory entries yet"
    const stores = [{ store, files: [f] }];
    const none = emptyListText(stores, 0);
    assert.match(none, /^No entry could be read: 1 file is broken \(see above\)\. This is not an empty memory\.$/);
    const empty = [{ store, files: [{ ...user, entries: [] }] }];
    assert.equal(emptyListText(empty, 0), 'The configured stores hold no memory entries yet.');
    assert.match(emptyListText([{ store, files: [], error: 'x' }], 0), /1 store could not be read/);
  });

  it('inspector provenance: damaged state.db says "provenance unavailable: … — <fix>"', async () => {
    const id = (await fileOf('hermes-memory')).entries[0].id;
    const intact = await core.showMemory({ stores: [store], entry: id });
    assert.equal(provenanceUnavailable(intact.provenance), undefined);
    await damagePages(path.join(home, 'state.db'), 3, 7);
    const shown = await core.showMemory({ stores: [store], entry: id });
    const line = provenanceUnavailable(shown.provenance) ?? '';
    assert.match(line, /^provenance unavailable: SQLite database .*state\.db is damaged: .* — Stop the agent/);
    assert.match(line, /\.recover/);
  });

  it('restore confirmation: restorePoint.preview says which broken file was not compared', async () => {
    const rp = await core.createRestorePoint({ target: `dir:${home}`, stores: [store] });
    await fs.writeFile(mem(), Buffer.concat([await fs.readFile(mem()), Buffer.from([0xc3, 0x28])]));
    const p = await core.previewRestorePoint({ target: `dir:${home}`, id: rp.id, scope: 'both', stores: [store] });
    assert.ok(
      p.warnings.some((w) => /MEMORY\.md is broken \(now\), so its entries were not compared/.test(w)),
      JSON.stringify(p.warnings),
    );
    assert.deepEqual(describeMemoryLoss(p), [], 'its entries are not called lost or brought back');
  });
});
