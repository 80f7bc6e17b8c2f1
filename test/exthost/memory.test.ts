/**
 * The memory inspector and the memory commands in the real extension host, against the real sidecar
 * and the demo agent's real Hermes home (<demo>/agent-home/.hermes): the webview renders the
 * entries; edit, delete and their undo change MEMORY.md on disk (undo byte-identically); an edit
 * against a stale content hash is refused and writes nothing; lint findings become tree badges; a
 * MEMORY.md that is a directory shows as broken in the Agent view, the inspector and the status bar.
 * Each test leaves MEMORY.md as it found it (earlier suites may have changed it).
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentKeepApi } from '../../extension/extension';
import type { LintFixOutcome, MemoryChange, MemoryDiffResult } from '../../extension/memory';
import type { AgentNode } from '../../extension/tree';
import type { RestorePoint } from '../../sidecar/protocol';
import { DEMO_MEMORY_ENTRIES } from '../../extension/demo';
import { DEMO_SESSIONS } from '../../scripts/lib/demoSessions';
import { labels, treePath, until } from './agent.test';

const log = (...a: unknown[]) => console.log('    [agentkeep-memory]', ...a);
const SEP = '\n§\n';

type EntryNode = Extract<AgentNode, { kind: 'entry' }>;

export function registerMemorySuite(): void {
  describe('Memory inspector and memory commands', function () {
    let api: AgentKeepApi;
    let memFile: string;
    let store: string;
    let original: string;
    const changes: MemoryChange[] = [];

    /** The MEMORY.md entries as the Agent view shows them (fresh from the sidecar). */
    async function memoryEntries(): Promise<EntryNode[]> {
      await api.refresh();
      return (await treePath(api, 'agent-home', 'Memory', 'hermes', 'MEMORY.md')).filter(
        (n): n is EntryNode => n.kind === 'entry',
      );
    }

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep');
      assert.ok(ext);
      api = await ext.activate();
      const workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      memFile = path.join(path.dirname(workspace), '.hermes', 'memories', 'MEMORY.md');
      store = (vscode.workspace.getConfiguration('agentkeep').get<string[]>('stores') ?? [])[0]!;
      assert.match(store, /^hermes:/);
      api.onMemoryChange((c) => changes.push(c));
    });

    beforeEach(() => {
      original = fs.readFileSync(memFile, 'utf8');
      changes.length = 0;
    });

    afterEach(() => {
      api.simulateUntrusted(false);
      // leave the demo as this test found it, whatever happened
      if (fs.readFileSync(memFile, 'utf8') !== original) fs.writeFileSync(memFile, original);
    });

    after(() => api.onMemoryChange(null));

    it('opens the inspector, and its webview renders every entry of every memory file', async function () {
      const files = await treePath(api, 'agent-home', 'Memory', 'hermes');
      let total = 0;
      for (const f of files) if (f.kind === 'memoryFile') total += f.file.entries.length;
      assert.ok(total >= 9, `the demo has at least 9 entries (MEMORY.md + USER.md), tree shows ${total}`);
      await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
      assert.equal(api.lastError(), undefined, JSON.stringify(api.lastError()));
      const r = await until(
        'the inspector webview to render',
        () => (api.memoryInspector().rendered?.entries ? api.memoryInspector().rendered : undefined),
        30000,
      );
      log(`rendered ${JSON.stringify(r)}`);
      assert.equal(api.memoryInspector().open, true);
      assert.equal(r.entries, total, 'the webview lists as many entries as the stores hold');
      assert.equal(r.shown, total, 'no filter is active at first');
    });

    it('selects an entry from the tree and shows its provenance; "Open session messages" opens what the session recorded', async function () {
      const first = (await memoryEntries()).find((n) => n.text === DEMO_MEMORY_ENTRIES[0]);
      assert.ok(first, "the demo's first MEMORY.md entry is listed");
      const item = api.tree.getTreeItem(first);
      assert.equal(
        item.command?.command,
        'agentkeep.openMemoryInspector',
        'clicking an entry opens it in the inspector',
      );
      await vscode.commands.executeCommand(item.command.command, ...(item.command.arguments ?? []));
      const r = await until(
        'the detail of the entry',
        () => {
          const x = api.memoryInspector().rendered;
          return x?.detail === first.id && x.traces !== undefined ? x : undefined;
        },
        20000,
      );
      log(`detail ${JSON.stringify(r)}`);
      // scripts/lib/demoHistory.ts wrote a CLI session whose memory tool call added this entry
      assert.ok((r.traces ?? 0) >= 1, 'the memory tool call in state.db is a provenance trace');
      const uri = await vscode.commands.executeCommand<string>('agentkeep.openSessionMessages', {
        store,
        id: first.id,
        trace: 0,
      });
      assert.ok(uri, JSON.stringify(api.lastError()));
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
      const session = DEMO_SESSIONS[0]!;
      assert.match(doc.getText(), new RegExp(`# Session ${session.id}`));
      assert.match(doc.getText(), /Source: cli/);
      assert.ok(doc.getText().includes('never with --force'), 'the document shows the message that wrote the entry');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    });

    it('is read-only in an untrusted workspace: the webview says so and the edit command refuses', async function () {
      api.simulateUntrusted(true);
      await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
      await until('the read-only render', () => api.memoryInspector().rendered?.readOnlyNote === 'untrusted');
      const [e] = await memoryEntries();
      const res = await vscode.commands.executeCommand(
        'agentkeep.editMemoryEntry',
        { store, id: e!.id },
        'An edit that must not happen.',
      );
      assert.equal(res, undefined);
      assert.equal(api.lastError()?.code, 'untrusted');
      assert.equal(fs.readFileSync(memFile, 'utf8'), original, 'MEMORY.md unchanged');
      api.simulateUntrusted(false);
      await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
      await until('the editable render', () => api.memoryInspector().rendered?.readOnlyNote === undefined);
    });

    it('edits an entry (MEMORY.md changes on disk) and undo restores the file byte-identically', async function () {
      const entries = await memoryEntries();
      const target = entries[1]!;
      const text = 'Node 22 is the runtime for the demo-agent-tools package now; npm stays the package manager.';
      const change = await vscode.commands.executeCommand<MemoryChange>(
        'agentkeep.editMemoryEntry',
        { store, id: target.id },
        text,
      );
      assert.ok(change, `edited (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(change.action, 'edit');
      assert.deepEqual(
        changes.map((c) => c.action),
        ['edit'],
        'the change was reported (instead of the Undo notification)',
      );
      const now = fs.readFileSync(memFile, 'utf8');
      assert.deepEqual(
        now.split(SEP),
        original.split(SEP).map((t, i) => (i === 1 ? text : t)),
        'only that entry changed',
      );
      const after = await memoryEntries();
      assert.equal(after[1]!.text, text, 'the tree shows the new text');
      await vscode.commands.executeCommand('agentkeep.undoMemoryChange', change.undo);
      assert.equal(api.lastError(), undefined, JSON.stringify(api.lastError()));
      assert.equal(fs.readFileSync(memFile, 'utf8'), original, 'undo restored MEMORY.md byte for byte');
    });

    it('deletes an entry and undo brings it back byte-identically', async function () {
      const entries = await memoryEntries();
      const last = entries[entries.length - 1]!;
      const change = await vscode.commands.executeCommand<MemoryChange>(
        'agentkeep.deleteMemoryEntry',
        { store, id: last.id },
        { confirm: false },
      );
      assert.ok(change, `deleted (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(change.entry.text, last.text);
      const now = fs.readFileSync(memFile, 'utf8');
      assert.ok(!now.includes(last.text), 'the entry left MEMORY.md');
      assert.deepEqual(now.split(SEP), original.split(SEP).slice(0, -1));
      await vscode.commands.executeCommand('agentkeep.undoMemoryChange', change.undo);
      assert.equal(api.lastError(), undefined, JSON.stringify(api.lastError()));
      assert.equal(fs.readFileSync(memFile, 'utf8'), original, 'undo restored MEMORY.md byte for byte');
    });

    it('refuses an edit when the agent wrote MEMORY.md in between (stale hash): nothing is written', async function () {
      const [first] = await memoryEntries();
      const staleHash = createHash('sha256').update(fs.readFileSync(memFile)).digest('hex');
      const agentVersion = original + SEP + 'The agent learned this while the user was editing.';
      fs.writeFileSync(memFile, agentVersion);
      const res = await vscode.commands.executeCommand(
        'agentkeep.editMemoryEntry',
        { store, id: first!.id },
        'The user edit that must not overwrite the agent.',
        { expectedHash: staleHash },
      );
      assert.equal(res, undefined);
      assert.equal(api.lastError()?.code, 'conflict', JSON.stringify(api.lastError()));
      assert.equal(fs.readFileSync(memFile, 'utf8'), agentVersion, "the agent's write survived");
    });

    it("shows the Timeline (the agent's writes from state.db as marks, one write with before/after); Fix findings opens the diff editor and applies only when accepted, as one undo step", async function () {
      const userFile = path.join(path.dirname(memFile), 'USER.md');
      const userOriginal = fs.readFileSync(userFile, 'utf8');
      try {
        await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
        await until('the inspector to render', () => api.memoryInspector().rendered?.entries);
        const h = await api.sidecar.request('memoryHistory', { stores: [store] });
        const agentWrite = h.writes.find((w) => w.source === 'agent' && w.after === DEMO_MEMORY_ENTRIES[0]);
        assert.ok(
          agentWrite,
          `the demo's state.db add of its first entry is on the timeline: ${JSON.stringify(h.writes.slice(0, 3))}`,
        );
        api.memoryInspector().show('timeline', { store, id: agentWrite.id });
        const r = await until(
          'the Timeline with the picked write',
          () =>
            api.memoryInspector().rendered?.timeline?.write === agentWrite.id
              ? api.memoryInspector().rendered
              : undefined,
          20000,
        );
        log(`timeline ${JSON.stringify(r.timeline)}`);
        assert.ok(r.timeline!.rows >= 1 && r.timeline!.marks >= r.timeline!.rows, 'rows of entries with their marks');

        // a copy of a MEMORY.md entry in USER.md: a duplicate finding; declined, nothing is written
        fs.writeFileSync(userFile, userOriginal + SEP + DEMO_MEMORY_ENTRIES[0]);
        api.memoryInspector().answerFix(false);
        const declined = await vscode.commands.executeCommand<LintFixOutcome>('agentkeep.fixMemoryFindings');
        assert.ok(declined, JSON.stringify(api.lastError()));
        assert.ok(declined.proposal.edits.length >= 1, JSON.stringify(declined.proposal));
        assert.equal(declined.applied, undefined);
        assert.equal(declined.docs.length, declined.proposal.files.length);
        assert.ok(
          vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputTextDiff)) ||
            declined.docs.length > 1,
          'the diff editor is open',
        );
        const after = await vscode.workspace.openTextDocument(vscode.Uri.parse(declined.docs[0]![1]));
        assert.equal(after.getText(), declined.proposal.files[0]!.after, 'the diff editor shows the file with the fix');
        assert.equal(
          fs.readFileSync(userFile, 'utf8'),
          userOriginal + SEP + DEMO_MEMORY_ENTRIES[0],
          'declined: nothing written',
        );
        // accepted: written, one copy left; one undo step brings the copy back
        api.memoryInspector().answerFix(true);
        const applied = await vscode.commands.executeCommand<LintFixOutcome>('agentkeep.fixMemoryFindings');
        assert.ok(applied?.applied?.group, JSON.stringify(api.lastError()));
        const count = (): number =>
          (fs.readFileSync(memFile, 'utf8') + SEP + fs.readFileSync(userFile, 'utf8')).split(DEMO_MEMORY_ENTRIES[0]!)
            .length - 1;
        assert.equal(count(), 1);
        const u = await api.sidecar.request('memoryUndoWrite', { stores: [store], write: applied.applied.group });
        assert.ok(u.writes.length >= 1);
        assert.equal(count(), 2);
      } finally {
        api.memoryInspector().answerFix(undefined);
        api.memoryInspector().show('list');
        fs.writeFileSync(userFile, userOriginal);
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      }
    });

    it('diffs the memory against a restore point (restore point side vs the file now)', async function () {
      const rp = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'memory inspector diff',
      });
      assert.ok(rp, JSON.stringify(api.lastError()));
      fs.writeFileSync(memFile, original + SEP + 'An entry added after the restore point.');
      const res = await vscode.commands.executeCommand<MemoryDiffResult>('agentkeep.diffMemory', store, rp.id);
      assert.ok(res, JSON.stringify(api.lastError()));
      assert.equal(res.restorePoint, rp.id);
      const row = res.rows.find(([live]) => live.endsWith('/memories/MEMORY.md'));
      assert.ok(row, `MEMORY.md is compared: ${JSON.stringify(res.rows)}`);
      assert.ok(
        res.rows.every(([live]) => /\.(md|jsonl)$/.test(live)),
        `only text memory files are compared: ${JSON.stringify(res.rows)}`,
      );
      const old = await vscode.workspace.openTextDocument(vscode.Uri.parse(row[1]));
      assert.equal(old.getText(), original, 'the restore point side is MEMORY.md as captured');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand('agentkeep.deleteRestorePoint', rp.id, { confirm: false });
    });

    it('shows a MEMORY.md that is a directory as broken (no "0 entries", no edit), with the fix; warns in the status bar', async function () {
      const content = fs.readFileSync(memFile);
      fs.rmSync(memFile);
      fs.mkdirSync(memFile);
      fs.writeFileSync(path.join(memFile, 'stray.txt'), 'not an entry');
      try {
        await api.refresh();
        const files = await treePath(api, 'agent-home', 'Memory');
        const storeRow = api.tree.getTreeItem(files.find((n) => n.kind === 'store')!);
        assert.match(String(storeRow.description), /^broken · /, 'the store row says broken');
        assert.equal((storeRow.iconPath as vscode.ThemeIcon).id, 'warning', 'a warning badge on the store row');
        const mf = (await treePath(api, 'agent-home', 'Memory', 'hermes')).find(
          (n) => n.kind === 'memoryFile' && n.file.kind === 'hermes-memory',
        );
        assert.ok(mf, 'MEMORY.md is still listed');
        const item = api.tree.getTreeItem(mf);
        log(`MEMORY.md row: ${String(item.description)}`);
        assert.match(String(item.description), /^broken: MEMORY\.md is a directory, not a file/);
        assert.doesNotMatch(String(item.description), /\d+ entr|\d+\/\d+ chars/, 'no "0 entries", no usage');
        assert.equal((item.iconPath as vscode.ThemeIcon).id, 'error');
        assert.equal(item.contextValue, 'memoryFile.broken');
        assert.match(String(item.tooltip), /\nFix: Move it away \(mv /);
        const rows = await treePath(api, 'agent-home', 'Memory', 'hermes', 'MEMORY.md');
        assert.deepEqual(
          rows.map((n) => n.kind),
          ['message', 'message'],
          'what is broken and the fix; no entry rows',
        );
        assert.match(labels(api, rows)[0]!, /^Entries unknown: MEMORY\.md is a directory/);
        assert.match(labels(api, rows)[1]!, /^Fix: Move it away/);
        assert.match(api.getStatusBarText(), /\$\(warning\)$/, 'the status bar warns');
        await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
        const r = await until(
          'the inspector to show the broken file',
          () => (api.memoryInspector().rendered?.broken ? api.memoryInspector().rendered : undefined),
          30000,
        );
        assert.equal(r.broken, 1, 'the webview shows MEMORY.md as broken');
        assert.equal(fs.readdirSync(memFile).join(), 'stray.txt', 'nothing written into it');
      } finally {
        fs.rmSync(memFile, { recursive: true, force: true });
        fs.writeFileSync(memFile, content);
        await api.refresh();
      }
      assert.doesNotMatch(api.getStatusBarText(), /warning/, 'the warning goes once the file is back');
    });

    it('puts lint findings on the tree entries as badges (or says lint is unavailable)', async function () {
      const entries = await memoryEntries();
      const dup = entries[0]!;
      fs.writeFileSync(memFile, original + SEP + dup.text);
      const after = await memoryEntries();
      const withBadge = after.filter((n) => String(api.tree.getTreeItem(n).description ?? '').includes('duplicate'));
      if (api.tree.lintNote) {
        log(`lint unavailable: ${api.tree.lintNote}`);
        assert.match(api.tree.lintNote, /not available|failed/);
        assert.equal(withBadge.length, 0);
        await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
        await until('the inspector to render with no findings', () => api.memoryInspector().rendered?.findings === 0);
        return;
      }
      assert.ok(
        withBadge.length >= 1,
        `a duplicate badge: ${labels(api, after).join(' | ')} / ${after.map((n) => api.tree.getTreeItem(n).description).join(' | ')}`,
      );
      const item = api.tree.getTreeItem(withBadge[0]!);
      assert.ok(item.iconPath instanceof vscode.ThemeIcon && item.iconPath.id !== 'note', 'the icon shows the finding');
      assert.match(String((item.tooltip as vscode.MarkdownString).value), /duplicate/);
    });
  });
}
