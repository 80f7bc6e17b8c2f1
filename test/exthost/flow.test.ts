/**
 * Extension-host tests of the "Snapshot & run" flow beyond the first pair (agent.test.ts): reuse of a
 * restore point of the last minute (deduplication), Compare with now, the config-file lens and the
 * first-change prompt (answered through a test hook, no clicking), and CodeLenses on notebook cells.
 * Runs after registerAgentSuite on the same demo agent (real sidecar, real files, real terminals).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentKeepApi } from '../../extension/extension';
import type { LensArg, SnapshotAndRunResult } from '../../extension/commands';
import type { CompareResult } from '../../extension/compare';
import type { RestorePoint } from '../../sidecar/protocol';
import { treePath, until } from './agent.test';

const log = (...a: unknown[]) => console.log('    [agentkeep-test]', ...a);

export function registerFlowSuite(): void {
  describe('AgentKeep flow: reuse, compare, config files, notebooks', function () {
    let api: AgentKeepApi;
    let workspace: string;
    let agentHome: string;
    let configYaml: string;
    /** The restore points as the tree shows them now (walks the tree, so its cache is fresh). */
    const list = async (): Promise<RestorePoint[]> => {
      await api.refresh();
      await treePath(api, 'agent-home', 'Restore points');
      return api.getTreeRestorePoints();
    };

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep');
      assert.ok(ext);
      api = await ext.activate();
      workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      agentHome = path.dirname(workspace);
      configYaml = path.join(agentHome, '.hermes', 'config.yaml');
    });

    it('reuses a restore point of the last minute when nothing changed, and takes a new one after a change', async function () {
      this.timeout(120000);
      // a harmless command in place of a lens argument: it changes nothing on disk
      const arg: LensArg = { command: 'true', file: path.join(workspace, 'setup.sh'), line: 5, class: 'deps' };
      const opts = { decision: 'keep' as const, timeoutMs: 60000, shellIntegrationTimeoutMs: 15000 };
      const first = await vscode.commands.executeCommand<SnapshotAndRunResult>('agentkeep.snapshotAndRun', arg, {
        ...opts,
        fresh: true,
      });
      assert.ok(first?.post, `first run (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(first.reused, false, 'fresh: true takes a new restore point');
      const second = await vscode.commands.executeCommand<SnapshotAndRunResult>('agentkeep.snapshotAndRun', arg, opts);
      assert.ok(second?.post, `second run (last error: ${JSON.stringify(api.lastError())})`);
      log(
        `first pre ${first.restorePoint.id} post ${first.post.id}; second pre ${second.restorePoint.id} (reused ${second.reused})`,
      );
      assert.equal(second.reused, true, 'within 60 s and nothing changed: reused');
      assert.equal(
        second.restorePoint.id,
        first.post.id,
        "the newest restore point (the first run's post) is the second run's pre",
      );
      assert.equal(second.post.pairOf, first.post.id);
      fs.writeFileSync(path.join(workspace, 'changed-since.txt'), 'the target changed');
      const third = await vscode.commands.executeCommand<SnapshotAndRunResult>('agentkeep.snapshotAndRun', arg, opts);
      assert.ok(third?.post);
      assert.equal(third.reused, false, 'the target changed since: a new restore point');
      assert.equal(third.restorePoint.kind, 'pre');
      assert.notEqual(third.restorePoint.id, second.post.id);

      // Compare with now: a file written after the restore point is added; the "before" side is empty
      fs.writeFileSync(path.join(workspace, 'after-third.txt'), 'written after the restore point\n');
      const cmp = await vscode.commands.executeCommand<CompareResult>('agentkeep.compareWithNow', third.post.id);
      assert.ok(cmp, `compareWithNow (last error: ${JSON.stringify(api.lastError())})`);
      assert.deepEqual(cmp.changes.added, ['workspace/after-third.txt']);
      assert.deepEqual(cmp.rows, [
        [
          vscode.Uri.file(path.join(workspace, 'after-third.txt')).toString(),
          undefined,
          vscode.Uri.file(path.join(workspace, 'after-third.txt')).toString(),
        ],
      ]);
      fs.rmSync(path.join(workspace, 'after-third.txt'));
      fs.rmSync(path.join(workspace, 'changed-since.txt'));
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    it('puts "Restore point before editing" on the agent\'s config files only', async function () {
      const lensesOf = async (file: string) =>
        (
          await vscode.commands.executeCommand<vscode.CodeLens[]>(
            'vscode.executeCodeLensProvider',
            vscode.Uri.file(file),
            10,
          )
        ).filter((l) => l.command?.command === 'agentkeep.restorePointBeforeEdit');
      await vscode.window.showTextDocument(vscode.Uri.file(configYaml));
      const ls = await until(
        'the config-file lens on config.yaml',
        async () => ((await lensesOf(configYaml)).length ? lensesOf(configYaml) : undefined),
        15000,
      );
      assert.equal(ls.length, 1);
      assert.equal(ls[0]!.range.start.line, 0);
      assert.match(
        ls[0]!.command!.title,
        /^\$\(history\) Restore point before editing \(last: (just now|\d+s ago|\dm ago)\)$/,
      );
      assert.deepEqual(ls[0]!.command!.arguments, [{ file: configYaml }]);
      assert.equal(
        (await lensesOf(path.join(workspace, 'package.json'))).length,
        1,
        'a dependency manifest inside the target',
      );
      assert.equal((await lensesOf(path.join(workspace, 'setup.sh'))).length, 0, 'not a config file');
      const c = vscode.workspace.getConfiguration('agentkeep');
      await c.update('configFiles.codeLens', false, vscode.ConfigurationTarget.Workspace);
      try {
        assert.equal((await lensesOf(configYaml)).length, 0, 'agentkeep.configFiles.codeLens: false hides it');
      } finally {
        await c.update('configFiles.codeLens', undefined, vscode.ConfigurationTarget.Workspace);
      }
      api.simulateUntrusted(true);
      try {
        assert.equal((await lensesOf(configYaml)).length, 0, 'hidden in an untrusted workspace');
      } finally {
        api.simulateUntrusted(false);
      }
      // the lens's command: a restore point before editing; right after, the same one is reused
      fs.writeFileSync(path.join(workspace, 'changed-before-edit.txt'), 'x');
      const r1 = await vscode.commands.executeCommand<{ restorePoint: RestorePoint; reused: boolean }>(
        'agentkeep.restorePointBeforeEdit',
        { file: configYaml },
      );
      assert.ok(r1, `restorePointBeforeEdit (last error: ${JSON.stringify(api.lastError())})`);
      assert.equal(r1.reused, false);
      assert.deepEqual(r1.restorePoint.reason, { file: configYaml, text: 'before editing config.yaml' });
      assert.equal(r1.restorePoint.kind, 'config-edit');
      const r2 = await vscode.commands.executeCommand<{ restorePoint: RestorePoint; reused: boolean }>(
        'agentkeep.restorePointBeforeEdit',
        { file: configYaml },
      );
      assert.equal(r2?.reused, true);
      assert.equal(r2?.restorePoint.id, r1.restorePoint.id, 'no second automatic restore point within a minute');
      fs.rmSync(path.join(workspace, 'changed-before-edit.txt'));
    });

    it('asks once, on the first unsaved change of a config file since the last restore point', async function () {
      this.timeout(60000);
      const c = vscode.workspace.getConfiguration('agentkeep');
      const editor = await vscode.window.showTextDocument(vscode.Uri.file(configYaml));
      const typeLine = async (text: string) => {
        const ok = await editor.edit((e) => e.insert(new vscode.Position(editor.document.lineCount, 0), text));
        assert.ok(ok, 'edit applied');
      };
      try {
        // a new restore point first (the target changed, so it is not reused): then an edit asks again
        fs.writeFileSync(path.join(workspace, 'changed-before-prompt.txt'), 'x');
        const manual = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
          label: 'before the prompt test',
        });
        assert.ok(manual);
        await until('the config-file lens to know the new restore point', async () =>
          (await list())[0]?.id === manual.id ? true : undefined,
        );
        fs.writeFileSync(
          path.join(workspace, 'changed-before-prompt.txt'),
          'changed again: the next restore point is new',
        );
        api.answerConfigPrompts('Take restore point');
        const n = api.configPrompts().length;
        await typeLine('# edited by the test\n');
        const rec = await until(
          'the prompt',
          () =>
            api.configPrompts().length > n && api.configPrompts().at(-1)?.restorePoint
              ? api.configPrompts().at(-1)
              : undefined,
          30000,
        ).catch((e) => {
          throw new Error(
            `${(e as Error).message}; prompts ${JSON.stringify(api.configPrompts().slice(n))}, last error ${JSON.stringify(api.lastError())}`,
          );
        });
        assert.equal(rec.file, configYaml);
        assert.equal(rec.message, 'Take a restore point before changing config.yaml?');
        assert.equal(rec.answer, 'Take restore point');
        assert.equal(rec.reused, false);
        assert.equal(rec.restorePoint?.reason?.text, 'before editing config.yaml');
        assert.equal(editor.document.isDirty, true, 'the edit stays unsaved');
        assert.doesNotMatch(
          fs.readFileSync(configYaml, 'utf8'),
          /edited by the test/,
          'the restore point has the file as it is on disk',
        );
        // more changes: no second prompt for the same restore point
        await typeLine('# a second edit\n');
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(api.configPrompts().length, n + 1, 'asked once');

        // after another restore point the next change asks again; "Don't ask again" turns the prompt off
        const again = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
          label: 'second prompt test',
        });
        assert.ok(again);
        await until('the new restore point', async () => ((await list())[0]?.id === again.id ? true : undefined));
        api.answerConfigPrompts("Don't ask again");
        await typeLine('# a third edit\n');
        await until(
          'the second prompt',
          () => (api.configPrompts().length === n + 2 && api.configPrompts().at(-1)?.answer ? true : undefined),
          15000,
        );
        await until(
          'agentkeep.configFiles.prompt = false',
          () => (c.inspect('configFiles.prompt')?.globalValue === false ? true : undefined),
          10000,
        );
        const m = api.configPrompts().length;
        await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
          label: 'third prompt test',
        });
        await typeLine('# a fourth edit\n');
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(api.configPrompts().length, m, 'no prompt once turned off');
      } finally {
        api.answerConfigPrompts(null);
        await vscode.workspace
          .getConfiguration('agentkeep')
          .update('configFiles.prompt', undefined, vscode.ConfigurationTarget.Global);
        await vscode.window.showTextDocument(editor.document);
        await vscode.commands.executeCommand('workbench.action.files.revert');
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        fs.rmSync(path.join(workspace, 'changed-before-prompt.txt'), { force: true });
      }
    });

    it('gets a "Snapshot & run" lens on a notebook cell with %pip install', async function () {
      this.timeout(60000);
      const file = path.join(workspace, 'analysis.ipynb');
      const nb = {
        cells: [
          { cell_type: 'markdown', metadata: {}, source: ['# Analysis'] },
          {
            cell_type: 'code',
            execution_count: null,
            metadata: {},
            outputs: [],
            source: ['import os\n', '%pip install pandas\n', 'print(os.getcwd())'],
          },
        ],
        metadata: {
          kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
          language_info: { name: 'python' },
        },
        nbformat: 4,
        nbformat_minor: 5,
      };
      fs.writeFileSync(file, JSON.stringify(nb, null, 1));
      try {
        const doc = await vscode.workspace.openNotebookDocument(vscode.Uri.file(file));
        await vscode.window.showNotebookDocument(doc);
        const cell = doc.cellAt(1).document;
        assert.equal(cell.uri.scheme, 'vscode-notebook-cell');
        const lenses = await until(
          'a lens on the code cell',
          async () => {
            const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>(
              'vscode.executeCodeLensProvider',
              cell.uri,
              10,
            );
            return ls?.some((l) => l.command?.command === 'agentkeep.snapshotAndRun') ? ls : undefined;
          },
          30000,
        );
        const snap = lenses.find((l) => l.command?.command === 'agentkeep.snapshotAndRun')!;
        assert.equal(snap.range.start.line, 1, 'on the %pip line of the cell');
        const arg = snap.command!.arguments![0] as LensArg;
        assert.equal(arg.class, 'deps');
        assert.match(arg.command, /pip install pandas/);
        assert.equal((arg as LensArg & { uri?: string }).uri, cell.uri.toString(), 'the lens names the cell document');
        assert.equal(arg.file, file, 'and the notebook file (the command runs in its folder)');
      } finally {
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        fs.rmSync(file, { force: true });
      }
    });
  });
}
