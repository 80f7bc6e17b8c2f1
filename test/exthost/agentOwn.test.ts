/**
 * Issue 15 item 7 in the real extension host: "Protect this agent's own changes" installs the
 * Hermes hook into the demo agent's real config.yaml (through the real CLI); the installed hook is
 * then run as Hermes runs it (argv, JSON on stdin), in another process, so the restore points it
 * takes appear without this window doing anything: the watcher finds them (and notifies, with the
 * setting on), the tree shows their origin and flags the pre whose post has not come; the agent's
 * restore requests show under "Restore requests" and are approved (a real restore) or denied.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ProtectResult } from '../../extension/agentCommands';
import type { AgentKeepApi } from '../../extension/extension';
import type { AgentNode } from '../../extension/tree';
import type { RestoreRequest, ResultOf } from '../../sidecar/protocol';
import { treePath, until } from './agent.test';

const log = (...a: unknown[]) => console.log('    [agentkeep-test]', ...a);

/** Run a hook command line as Hermes does (split into argv, no shell) with the JSON payload on stdin. */
function runAsHermes(
  command: string,
  payload: object,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const argv = command.split(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(JSON.stringify(payload));
  });
}

function payload(event: 'pre' | 'post', command: string, id: string): object {
  return {
    hook_event_name: event === 'pre' ? 'pre_tool_call' : 'post_tool_call',
    tool_name: 'terminal',
    tool_input: { command },
    session_id: 'sess_3f2a9c81d0e4',
    cwd: '/home/user/project',
    profile: 'default',
    extra: { task_id: 't1', tool_call_id: id, turn_id: 'u1' },
  };
}

export function registerAgentOwnSuite(): void {
  describe("AgentKeep: the agent's own restore points, requests and hooks", function () {
    let api: AgentKeepApi;
    let hermesHome: string;
    let hookCommand: string;
    const conf = () => vscode.workspace.getConfiguration('agentkeep');
    const target = () => conf().get<string>('target') ?? '';
    const item = (n: AgentNode) => api.tree.getTreeItem(n);
    const rpRows = () => treePath(api, 'agent-home', 'Restore points');

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep');
      api = await ext!.activate();
      hermesHome = (conf().get<string[]>('stores') ?? [])[0]!.replace(/^hermes:/, '');
    });
    after(async function () {
      await conf().update('notifyAgentRestorePoints', undefined, vscode.ConfigurationTarget.Workspace);
    });

    it("Protect this agent's own changes installs the Hermes hooks and MCP server into config.yaml, with the consent note", async function () {
      const before = fs.readFileSync(path.join(hermesHome, 'config.yaml'), 'utf8');
      const r = await vscode.commands.executeCommand<ProtectResult>('agentkeep.protectAgent', {
        kind: 'hermes',
        mcp: true,
        quiet: true,
      });
      assert.ok(r, JSON.stringify(api.lastError()));
      log('protect:', r.change.message);
      assert.equal(r.kind, 'hermes');
      assert.equal(r.change.changed, true);
      assert.ok(r.change.notes.some((n) => /first-use consent/.test(n) && /--accept-hooks/.test(n)));
      const after = fs.readFileSync(path.join(hermesHome, 'config.yaml'), 'utf8');
      for (const line of before.split('\n')) assert.ok(after.includes(line), `kept: ${line}`);
      assert.match(after, /mcp_servers:/);
      const m = /command: "?(\S+ \S+hook\.js hook run hermes --agent \S+ --state-dir \S+?)"?$/m.exec(after);
      assert.ok(m, after);
      hookCommand = m[1]!;
      assert.ok(hookCommand.includes(`--agent ${r.agent}`));
      const agents = await api.sidecar.request('agentList', {});
      const named = agents.agents.find((a) => a.name === r.agent);
      assert.equal(named?.target, target(), 'the hook acts for the configured target');
      // a second run changes nothing and says so
      const again = await vscode.commands.executeCommand<ProtectResult>('agentkeep.protectAgent', {
        kind: 'hermes',
        mcp: true,
        quiet: true,
      });
      assert.equal(again?.change.changed, false);
      assert.match(again!.change.message, /already in .*nothing changed/);
    });

    it('a restore point the hook takes in another process shows its origin; the pre without its post is flagged; the notification fires', async function () {
      await conf().update('notifyAgentRestorePoints', true, vscode.ConfigurationTarget.Workspace);
      await api.checkAgentActivity(); // the look before the agent acts
      const pre = await runAsHermes(hookCommand, payload('pre', 'pip install requests', 'call_1'));
      assert.equal(pre.code, 0, pre.stderr);
      const news = await api.checkAgentActivity();
      assert.equal(news.length, 1, 'the watcher finds the restore point the hook took');
      const shown = api.agentNotifications().at(-1);
      log('notification:', shown?.message);
      assert.match(shown!.message, /taken by the agent hermes in session sess_3f2…: pip install requests/);
      const row = await until('the hook restore point in the tree', async () =>
        (await rpRows()).find((n) => /^Hermes before: pip install requests/.test(String(item(n).label))),
      );
      const ti = item(row);
      assert.equal((ti.iconPath as vscode.ThemeIcon).id, 'warning', 'a pre without its post is flagged');
      assert.match(
        String(ti.description),
        /no post: did not finish · by the agent hermes in session sess_3f2…: pip install requests/,
      );
      const tip = (ti.tooltip as vscode.MarkdownString).value;
      assert.match(tip, /No post restore point/);
      assert.match(tip, /the tool call, the agent or its hook died/);

      const post = await runAsHermes(hookCommand, payload('post', 'pip install requests', 'call_1'));
      assert.equal(post.code, 0, post.stderr);
      await api.checkAgentActivity();
      await until('the pair in the tree', async () => {
        const rows = await rpRows();
        const p = rows.find((n) => /^Hermes before: pip install requests/.test(String(item(n).label)));
        return (
          p &&
          (item(p).iconPath as vscode.ThemeIcon).id === 'plug' &&
          rows.some((n) => /^Hermes after:/.test(String(item(n).label)))
        );
      });
    });

    it('the agent\'s restore requests show under "Restore requests"; Deny records it, Approve restores', async function () {
      const rps = api.getTreeRestorePoints();
      const pre = rps.find((r) => r.label.startsWith('Hermes before: pip install requests'))!;
      const ask = (reason: string) =>
        api.sidecar.request('requestCreate', {
          target: target(),
          restorePoint: pre.id,
          scope: 'agent',
          reason,
          agent: 'hermes',
        });
      const first = await ask('the install broke my memory');
      api.tree.refresh();
      const group = await until('the Restore requests group', async () =>
        (await api.tree.getChildren((await api.tree.getChildren())[0])).find(
          (n) => item(n).label === 'Restore requests',
        ),
      );
      assert.match(String(item(group).description), /^1 waiting for you$/);
      const [reqRow] = await api.tree.getChildren(group);
      const ri = item(reqRow!);
      assert.equal(ri.label, 'hermes asks to restore "Hermes before: pip install requests"');
      assert.equal(ri.contextValue, 'restoreRequest.pending');
      assert.match(String(ri.description), /^scope agent · .* · the install broke my memory$/);

      const denied = await vscode.commands.executeCommand<RestoreRequest>('agentkeep.denyRequest', reqRow, {
        note: 'not now',
      });
      assert.equal(denied?.status, 'denied', JSON.stringify(api.lastError()));
      assert.equal(denied?.note, 'not now');
      const noGroup = await until('the group gone after Deny', async () => {
        const children = await api.tree.getChildren((await api.tree.getChildren())[0]);
        return children.every((n) => item(n).label !== 'Restore requests') ? true : undefined;
      });
      assert.ok(noGroup);
      // a decided request cannot be approved
      await vscode.commands.executeCommand('agentkeep.approveRequest', first.id, { confirm: false });
      assert.match(api.lastError()?.message ?? '', /is denied, not pending/);

      const second = await ask('roll my memory back please');
      const approved = await vscode.commands.executeCommand<ResultOf<'requestApprove'>>(
        'agentkeep.approveRequest',
        second.id,
        { confirm: false },
      );
      assert.equal(approved?.request.status, 'approved', JSON.stringify(api.lastError()));
      assert.ok(approved?.restore?.undo, 'the normal restore took its pre-restore point (Undo)');
      const all = await api.sidecar.request('requestList', { target: target() });
      assert.deepEqual(
        all
          .filter((r) => r.id === first.id || r.id === second.id)
          .map((r) => r.status)
          .sort(),
        ['approved', 'denied'],
      );
    });

    it('approving and protecting need a trusted workspace', async function () {
      api.simulateUntrusted(true);
      try {
        await vscode.commands.executeCommand('agentkeep.protectAgent', { kind: 'hermes', quiet: true });
        assert.equal(api.lastError()?.code, 'untrusted');
        await vscode.commands.executeCommand('agentkeep.approveRequest', 'req_x', { confirm: false });
        assert.equal(api.lastError()?.code, 'untrusted');
      } finally {
        api.simulateUntrusted(false);
      }
    });
  });
}
