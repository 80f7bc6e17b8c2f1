/**
 * Integration tests in the real extension host: the extension talks to the real sidecar
 * (out/sidecar.js over stdio) about the real demo agent tree that scripts/test-exthost.ts created
 * (the opened folder is <demo>/agent-home/workspace, configured by its .vscode/settings.json).
 * The Snapshot & run test really runs `npm install left-pad@1.3.0` in a terminal.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentKeepApi } from '../../extension/extension';
import type { LensArg, SnapshotAndRunResult } from '../../extension/commands';
import type { CompareResult } from '../../extension/compare';
import { DEMO_MEMORY_ENTRIES, DEMO_USER_ENTRIES } from '../../extension/demo';
import type { AgentNode } from '../../extension/tree';
import type { RestorePoint, ResultOf } from '../../sidecar/protocol';

const log = (...a: unknown[]) => console.log('    [agentkeep-test]', ...a);

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30000,
  everyMs = 250,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Walk the tree from the root, picking the child whose label matches each step. */
export async function treePath(api: AgentKeepApi, ...labels: (string | RegExp)[]): Promise<AgentNode[]> {
  let children = await api.tree.getChildren();
  for (const l of labels) {
    const next = children.find((c) => {
      const label = String(api.tree.getTreeItem(c).label ?? '');
      return typeof l === 'string' ? label === l : l.test(label);
    });
    if (!next)
      throw new Error(
        `No tree node ${String(l)} among: ${children.map((c) => String(api.tree.getTreeItem(c).label)).join(', ')}`,
      );
    children = await api.tree.getChildren(next);
  }
  return children;
}

export function labels(api: AgentKeepApi, nodes: AgentNode[]): string[] {
  return nodes.map((n) => String(api.tree.getTreeItem(n).label ?? ''));
}

export function registerAgentSuite(): void {
  describe('AgentKeep in the extension host', function () {
    let api: AgentKeepApi;
    let workspace: string;
    let agentHome: string;
    let lensArg: LensArg;
    let snap: SnapshotAndRunResult;
    const target = () => vscode.workspace.getConfiguration('agentkeep').get<string>('target') ?? '';

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep');
      assert.ok(ext, 'the AgentKeep extension is loaded');
      api = await ext.activate();
      workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      agentHome = path.dirname(workspace);
      log(`vscode ${vscode.version}, workspace ${workspace}, target ${target()}`);
    });

    it('activates with the demo agent configured and the status bar shown', async function () {
      assert.equal(target(), `dir:${agentHome}`);
      const text = await until('status bar text', () => (api.getStatusBarText() ? api.getStatusBarText() : undefined));
      assert.equal(text, '$(history) no restore point');
      assert.equal(api.sidecarRunning(), true, 'a configured agent starts the sidecar');
    });

    it('shows the agent, its (empty) restore points and the memory entries in the tree', async function () {
      const roots = await api.tree.getChildren();
      assert.equal(roots.length, 1);
      const agent = api.tree.getTreeItem(roots[0]!);
      assert.equal(agent.label, 'agent-home');
      assert.match(
        String(agent.description),
        /^reachable · dir · 0 B of 10 GiB$/,
        'disk use of the restore points against the size cap',
      );
      assert.deepEqual(labels(api, await api.tree.getChildren(roots[0])), ['Restore points', 'Memory']);
      assert.deepEqual(labels(api, await treePath(api, 'agent-home', 'Restore points')), ['No restore points yet']);
      const files = await treePath(api, 'agent-home', 'Memory', 'hermes');
      assert.deepEqual(labels(api, files).sort(), ['MEMORY.md', 'SOUL.md', 'USER.md', 'skills']); // SOUL.md and skills since the Hermes adapter lists them
      const memItem = api.tree.getTreeItem(files.find((f) => api.tree.getTreeItem(f).label === 'MEMORY.md')!);
      assert.match(String(memItem.description), /^\d+\/2200 chars · 6 entries$/);
      const entries = await treePath(api, 'agent-home', 'Memory', 'hermes', 'MEMORY.md');
      assert.equal(entries.length, DEMO_MEMORY_ENTRIES.length);
      assert.equal(entries[0]!.kind === 'entry' && entries[0]!.text, DEMO_MEMORY_ENTRIES[0]);
      const users = await treePath(api, 'agent-home', 'Memory', 'hermes', 'USER.md');
      assert.equal(users.length, DEMO_USER_ENTRIES.length);
    });

    it('gets "Snapshot & run" and "Run" CodeLenses above the npm install in setup.sh', async function () {
      const uri = vscode.Uri.file(path.join(workspace, 'setup.sh'));
      await vscode.window.showTextDocument(uri);
      const lines = fs.readFileSync(uri.fsPath, 'utf8').split('\n');
      const installLine = lines.findIndex((l) => l.startsWith('npm install')); // 0-based
      const lenses = await until('CodeLenses on setup.sh', async () => {
        const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10);
        return ls?.some((l) => l.command?.title.includes('Snapshot & run')) ? ls : undefined;
      });
      log('lenses:', JSON.stringify(lenses.map((l) => [l.range.start.line, l.command?.title, l.command?.command])));
      const snapLens = lenses.find((l) => l.command?.command === 'agentkeep.snapshotAndRun')!;
      const runLens = lenses.find((l) => l.command?.command === 'agentkeep.run');
      assert.ok(runLens, 'a Run lens too');
      assert.equal(snapLens.range.start.line, installLine);
      assert.match(snapLens.command!.title, /\$\(history\) Snapshot & run/);
      lensArg = snapLens.command!.arguments![0] as LensArg;
      assert.equal(lensArg.command, lines[installLine]);
      assert.equal(lensArg.line, installLine + 1);
      assert.equal(lensArg.file, uri.fsPath);
      assert.equal(lensArg.class, 'deps');
    });

    it('refuses to create or restore in an untrusted workspace', async function () {
      api.simulateUntrusted(true);
      try {
        const r = await vscode.commands.executeCommand('agentkeep.createRestorePoint', { label: 'should not exist' });
        assert.equal(r, undefined);
        assert.equal(api.lastError()?.code, 'untrusted');
        const r2 = await vscode.commands.executeCommand('agentkeep.snapshotAndRun', lensArg, { decision: 'keep' });
        assert.equal(r2, undefined);
        assert.equal(api.lastError()?.code, 'untrusted');
        const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>(
          'vscode.executeCodeLensProvider',
          vscode.Uri.file(lensArg.file),
          10,
        );
        assert.deepEqual(
          ls.filter((l) => l.command?.command?.startsWith('agentkeep.')).map((l) => l.command?.title),
          [],
          'no lenses in an untrusted workspace',
        );
      } finally {
        api.simulateUntrusted(false);
      }
      await api.refresh();
      assert.equal(api.getStatusBarText(), '$(history) no restore point');
    });

    it('Snapshot & run: a pre/post pair around a real npm install, both kept, and Compare shows node_modules/left-pad added', async function () {
      this.timeout(180000);
      const r = await vscode.commands.executeCommand<SnapshotAndRunResult>('agentkeep.snapshotAndRun', lensArg, {
        decision: 'keep',
        timeoutMs: 150000,
        shellIntegrationTimeoutMs: 15000,
      });
      assert.ok(r, `snapshotAndRun returned a result (last error: ${JSON.stringify(api.lastError())})`);
      snap = r;
      log(`restore point ${r.restorePoint.id}, exit ${r.exitCode}, shell integration ${r.viaShellIntegration}`);
      assert.equal(r.restorePoint.kind, 'pre');
      assert.equal(r.restorePoint.label, lensArg.command);
      assert.equal(r.restorePoint.reason?.command, lensArg.command);
      assert.equal(r.restorePoint.reason?.line, lensArg.line);
      assert.equal(r.viaShellIntegration, true, 'the exit code came from shell integration');
      assert.equal(r.exitCode, 0);
      assert.ok(
        fs.existsSync(path.join(workspace, 'node_modules', 'left-pad', 'package.json')),
        'npm really installed left-pad',
      );
      assert.equal(r.decision, 'keep');
      assert.equal(r.reused, false, 'the first restore point of the agent is new');
      assert.equal(r.restorePoint.reason?.class, 'deps');
      assert.ok(r.post, 'a post restore point was taken after the command');
      assert.equal(r.post.kind, 'post');
      assert.equal(r.post.pairOf, r.restorePoint.id);
      assert.equal(r.post.label, `after: ${lensArg.command}`);
      assert.equal(r.kept?.status, 'kept');
      assert.equal(r.keptPost?.status, 'kept', 'Keep marks both restore points of the pair');
      await api.refresh();
      const rows = await treePath(api, 'agent-home', 'Restore points');
      assert.deepEqual(labels(api, rows), [`after: ${lensArg.command}`, lensArg.command], 'post (newest) and pre');
      for (const row of rows)
        assert.match(String(api.tree.getTreeItem(row).description), /^(just now|\d+s ago) · from setup\.sh:5$/);
      assert.equal(api.tree.getTreeItem(rows[0]!).contextValue, 'restorePoint.kept.post');
      assert.match(api.getStatusBarText(), /^\$\(history\) (just now|\d+s ago)$/);

      // Compare (as the notification's button does): pre -> post in the multi-file diff editor.
      const cmp = await vscode.commands.executeCommand<CompareResult>('agentkeep.compare', r.post.id);
      assert.ok(cmp, `compare returned a result (last error: ${JSON.stringify(api.lastError())})`);
      log(
        `compare: ${cmp.title}; ${cmp.rows.length} rows of ${cmp.total}; changed ${JSON.stringify(cmp.changes.changed)}`,
      );
      assert.ok(cmp.changes.added.includes('workspace/node_modules/left-pad'), 'node_modules/left-pad added');
      assert.ok(cmp.changes.added.includes('workspace/node_modules/left-pad/package.json'));
      assert.ok(cmp.changes.changed.includes('workspace/package.json'), 'package.json changed');
      const pkgRow = cmp.rows.find(([res]) => res.endsWith('/workspace/package.json'));
      assert.ok(pkgRow && pkgRow[1] && pkgRow[2], 'package.json is shown before and after');
      const leftPadRow = cmp.rows.find(([res]) => res.endsWith('/node_modules/left-pad/package.json'));
      assert.ok(leftPadRow && !leftPadRow[1] && leftPadRow[2], 'an added file has no "before" side');
      assert.ok(
        !cmp.rows.some(([res]) => res.endsWith('/node_modules/left-pad')),
        'directories are not shown as files',
      );
      const before = await vscode.workspace.openTextDocument(vscode.Uri.parse(pkgRow[1]!));
      assert.deepEqual(
        JSON.parse(before.getText()),
        { name: 'demo-agent-tools', private: true },
        'the pre side is package.json as it was',
      );
      const after = await vscode.workspace.openTextDocument(vscode.Uri.parse(pkgRow[2]!));
      assert.match(after.getText(), /"left-pad"/, 'the post side has the dependency');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    it('restores the restore point (scope both): node_modules is gone, and the restore can be undone', async function () {
      this.timeout(120000);
      fs.writeFileSync(
        path.join(agentHome, '.hermes', 'memories', 'MEMORY.md'),
        DEMO_MEMORY_ENTRIES.join('\n§\n') + '\n§\nleft-pad 1.3.0 is installed in workspace/.',
      );
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        snap.restorePoint.id,
        'both',
        { confirm: false },
      );
      assert.ok(res, `restore returned a result (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(fs.existsSync(path.join(workspace, 'node_modules')), false, 'node_modules removed');
      assert.deepEqual(JSON.parse(fs.readFileSync(path.join(workspace, 'package.json'), 'utf8')), {
        name: 'demo-agent-tools',
        private: true,
      });
      assert.equal(
        fs.readFileSync(path.join(agentHome, '.hermes', 'memories', 'MEMORY.md'), 'utf8'),
        DEMO_MEMORY_ENTRIES.join('\n§\n'),
        'memory restored too',
      );
      assert.equal((fs.statSync(path.join(agentHome, '.hermes', '.env')).mode & 0o777).toString(8), '600');
      assert.ok(
        res.changes.added.some((p) => p.includes('node_modules')),
        'the change summary names node_modules',
      );
      assert.equal(res.undo!.kind, 'pre-restore');
      await api.refresh();
      const rows = await treePath(api, 'agent-home', 'Restore points');
      const rps = api.getTreeRestorePoints();
      assert.equal(rows.length, 3, 'pre, post and the pre-restore point');
      assert.ok(
        rps.some((p: RestorePoint) => p.kind === 'pre-restore' && p.id === res.undo!.id),
        'the tree shows the pre-restore point',
      );
      assert.equal(rps[0]!.id, res.undo!.id, 'newest first');

      const undo = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        res.undo!.id,
        'both',
        { confirm: false },
      );
      assert.ok(undo, `undo returned a result (last error: ${JSON.stringify(api.lastError())})`);
      assert.ok(
        fs.existsSync(path.join(workspace, 'node_modules', 'left-pad', 'package.json')),
        'undo brought left-pad back',
      );
      assert.match(
        fs.readFileSync(path.join(agentHome, '.hermes', 'memories', 'MEMORY.md'), 'utf8'),
        /left-pad 1\.3\.0 is installed/,
      );
    });

    it('restores agent state only (scope agent), leaving machine files alone', async function () {
      const mem = path.join(agentHome, '.hermes', 'memories', 'MEMORY.md');
      const before = fs.readFileSync(mem, 'utf8');
      const rp = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'before memory edit',
      });
      assert.ok(rp, `created (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(rp.kind, 'manual');
      fs.writeFileSync(mem, before + '\n§\nA wrong memory the agent should forget.');
      fs.writeFileSync(path.join(workspace, 'notes.txt'), 'made after the restore point');
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        rp.id,
        'agent',
        { confirm: false },
      );
      assert.ok(res, `restored (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(fs.readFileSync(mem, 'utf8'), before);
      assert.ok(fs.existsSync(path.join(workspace, 'notes.txt')), 'scope agent keeps machine files');
    });

    it('shows details in a webview, deletes a restore point and reports an unknown id', async function () {
      const rows = await treePath(api, 'agent-home', 'Restore points');
      const manual = rows
        .flatMap((n) => (n.kind === 'restorePoint' ? [n.rp] : []))
        .find((p) => p.label === 'before memory edit');
      assert.ok(manual);
      await vscode.commands.executeCommand('agentkeep.showDetails', manual.id);
      assert.equal(api.detailsShownId(), manual.id);
      // rename and mark important: the journal and the tree item follow
      const renamed = await vscode.commands.executeCommand<{ label: string }>(
        'agentkeep.renameRestorePoint',
        manual.id,
        'memory edit (renamed)',
      );
      assert.equal(renamed?.label, 'memory edit (renamed)');
      const starred = await vscode.commands.executeCommand<{ important?: boolean }>(
        'agentkeep.toggleImportant',
        manual.id,
      );
      assert.equal(starred?.important, true);
      await api.refresh();
      const row = (await treePath(api, 'agent-home', 'Restore points')).find(
        (n) => n.kind === 'restorePoint' && n.rp.id === manual.id,
      )!;
      const rowItem = api.tree.getTreeItem(row);
      assert.equal(rowItem.label, 'memory edit (renamed)');
      assert.match(String(rowItem.description), /★ important/);
      const del = await vscode.commands.executeCommand<{ deleted: string }>('agentkeep.deleteRestorePoint', manual.id, {
        confirm: false,
      });
      assert.equal(del?.deleted, manual.id);
      await api.refresh();
      const after = await treePath(api, 'agent-home', 'Restore points');
      assert.equal(after.length, rows.length - 1);
      assert.ok(
        after.every((n) => n.kind !== 'restorePoint' || n.rp.id !== manual.id),
        'the deleted restore point left the tree',
      );
      const bad = await vscode.commands.executeCommand('agentkeep.restore', 'rp_does_not_exist', 'both', {
        confirm: false,
      });
      assert.equal(bad, undefined);
      assert.equal(api.lastError()?.code, 'restore_point_not_found');
      assert.ok(api.lastError()?.hint, 'errors carry a hint');
    });

    it('hides the CodeLenses when agentkeep.codeLens is "off", and shows only the classes listed', async function () {
      const uri = vscode.Uri.file(path.join(workspace, 'setup.sh'));
      const c = vscode.workspace.getConfiguration('agentkeep');
      const snapLenses = async () =>
        (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10)).filter(
          (l) => l.command?.command === 'agentkeep.snapshotAndRun',
        );
      await c.update('codeLens', 'off', vscode.ConfigurationTarget.Workspace);
      try {
        const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10);
        assert.deepEqual(
          ls.filter((l) => l.command?.command?.startsWith('agentkeep.')),
          [],
        );
        // setup.sh's npm install is deps: a filter of other classes hides it (in the sidecar), deps shows it
        await c.update('codeLens', ['system', 'remote-code'], vscode.ConfigurationTarget.Workspace);
        await until(
          'no deps lens under ["system", "remote-code"]',
          async () => ((await snapLenses()).length === 0 ? true : undefined),
          15000,
        );
        await c.update('codeLens', ['deps'], vscode.ConfigurationTarget.Workspace);
        const deps = await until(
          'the deps lens under ["deps"]',
          async () => ((await snapLenses()).length ? snapLenses() : undefined),
          15000,
        );
        assert.equal((deps[0]!.command!.arguments![0] as LensArg).class, 'deps');
      } finally {
        await c.update('codeLens', undefined, vscode.ConfigurationTarget.Workspace);
      }
      const back = await until('lenses back', async () => {
        const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10);
        return ls.some((l) => l.command?.command === 'agentkeep.snapshotAndRun') || undefined;
      });
      assert.equal(back, true);
    });

    it('sets up a demo agent and points the settings at a picked agent folder', async function () {
      const c = vscode.workspace.getConfiguration('agentkeep');
      const before = { target: c.get<string>('target'), stores: c.get<string[]>('stores') };
      const root = path.join(path.dirname(agentHome), 'second-demo');
      const demo = await vscode.commands.executeCommand<{ created: boolean; agentHome: string; hermesHome: string }>(
        'agentkeep.setupDemo',
        { open: false, root },
      );
      assert.ok(demo?.created, `setupDemo created a demo (last error: ${JSON.stringify(api.lastError())})`);
      assert.ok(fs.existsSync(path.join(demo.hermesHome, 'memories', 'MEMORY.md')));
      try {
        const picked = await vscode.commands.executeCommand<{ target: string; stores: string[] }>(
          'agentkeep.pickFolder',
          demo.agentHome,
        );
        assert.deepEqual(picked, { target: `dir:${demo.agentHome}`, stores: [`hermes:${demo.hermesHome}`] });
        assert.equal(vscode.workspace.getConfiguration('agentkeep').get('target'), `dir:${demo.agentHome}`);
        const text = await until(
          'status bar for the new agent',
          () => (api.getStatusBarText() === '$(history) no restore point' ? api.getStatusBarText() : undefined),
          15000,
        );
        assert.equal(text, '$(history) no restore point');
        const roots = await api.tree.getChildren();
        assert.equal(roots[0]?.kind === 'agent' && roots[0].config.target, `dir:${demo.agentHome}`);
      } finally {
        await c.update('target', before.target, vscode.ConfigurationTarget.Workspace);
        await c.update('stores', before.stores, vscode.ConfigurationTarget.Workspace);
      }
      const missing = await vscode.commands.executeCommand('agentkeep.pickFolder', path.join(root, 'does-not-exist'));
      assert.equal(missing, undefined);
      assert.equal(api.lastError()?.code, 'target_not_found');
    });

    it("shows the sidecar's next actions: an error carries them, an interrupted restore gets rows that run them", async function () {
      this.timeout(120000);
      // an error from the sidecar keeps its next actions (the notification shows them as buttons)
      const unknown = 'ak_20990101_000000_zzzz';
      const failed = await vscode.commands.executeCommand('agentkeep.runAction', {
        title: 'Rename',
        method: 'agentkeep/restorePoint.label',
        params: { target: target(), id: unknown, label: 'x' },
      });
      assert.equal(failed, undefined);
      assert.equal(api.lastError()?.code, 'restore_point_not_found');
      assert.deepEqual(api.lastError()?.actions, [
        { title: 'List restore points', method: 'agentkeep/restorePoint.list', params: { target: target() } },
      ]);

      // a restore whose process died while writing: its marker in the journal dir (pid above any pid_max)
      const a = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'interrupted from',
      });
      const b = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'before the interrupted restore',
      });
      assert.ok(a && b, JSON.stringify(api.lastError()));
      const journal = path.join(vscode.workspace.getConfiguration('agentkeep').get<string>('stateDir')!, 'journal');
      const key = fs.readdirSync(journal).find((k) => fs.existsSync(path.join(journal, k, `${a.id}.json`)));
      assert.ok(key, 'the journal dir of the target');
      const marker = path.join(journal, key, '.restoring.json');
      fs.writeFileSync(
        marker,
        JSON.stringify({
          id: a.id,
          undo: b.id,
          scope: 'agent',
          startedAt: new Date().toISOString(),
          pid: 4194305,
          host: os.hostname(),
        }),
      );
      await api.refresh();
      const rows = await treePath(api, 'agent-home');
      assert.deepEqual(labels(api, rows), [
        `Finish the restore: restore ${a.id} (scope agent)`,
        `Go back: restore ${b.id} (scope both)`,
        'Restore points',
        'Memory',
      ]);
      const goBack = api.tree.getTreeItem(rows[1]!).command!;
      assert.equal(goBack.command, 'agentkeep.runAction');
      // the row runs the action through the restore command (confirm: false stands for the modal's Restore)
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        goBack.command,
        ...(goBack.arguments ?? []),
        { confirm: false },
      );
      assert.ok(res, `go back returned a result (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(res.restored.id, b.id);
      assert.equal(fs.existsSync(marker), false, 'a finished restore removes the marker');
      await api.refresh();
      assert.deepEqual(labels(api, await treePath(api, 'agent-home')), ['Restore points', 'Memory']);
      for (const id of [res.undo!.id, b.id, a.id])
        await vscode.commands.executeCommand('agentkeep.deleteRestorePoint', id, { confirm: false });
    });
  });
}
