/**
 * Issue 15 item 7, the Agent view's logic (extension/origin.ts, extension/rpView.ts) on real parts:
 * restore points taken by the real Hermes hook (installed with the argv the extension builds, run as
 * Hermes runs it), by `agentkeep run`, through the core as the MCP server and the apt hook write
 * them, and restore requests made through the core; the pre-without-post verdict is the CLI list's.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { call } from '../../sidecar/core/dispatch';
import { kindText, PRE_WITHOUT_POST as CLI_PRE_WITHOUT_POST } from '../../sidecar/cli/format';
import type { RestorePoint, StoreDescription } from '../../sidecar/protocol';
import {
  agentRestorePointMessage,
  agentZeroMcpSettings,
  hookAgentName,
  hookCandidates,
  hookInstallArgs,
  isPreWithoutPost,
  newAgentRestorePoints,
  ORIGIN_ICONS,
  originView,
  parseHookInstallOutput,
  preWithoutPostText,
  requestView,
  shortSession,
} from '../../extension/origin';
import { rpItemView } from '../../extension/rpView';
import { formatReason } from '../../extension/format';
import { REPO } from './helpers/paths';
import { buildHook, buildSidecar, runSidecar, SIDECAR } from './helpers/sidecar';

/** The stdin JSON Hermes writes for a tool call (agent/shell_hooks.py, as test/unit/hooks-hermes.test.ts builds it). */
function hermesPayload(
  event: 'pre' | 'post',
  tool: string,
  input: Record<string, unknown>,
  session: string,
  id: string,
): string {
  const extra = {
    task_id: 'task_1',
    tool_call_id: id,
    turn_id: 'turn_1',
    api_request_id: 'req_1',
    middleware_trace: [],
  };
  return JSON.stringify({
    hook_event_name: event === 'pre' ? 'pre_tool_call' : 'post_tool_call',
    tool_name: tool,
    tool_input: input,
    session_id: session,
    cwd: '/home/user/project',
    profile: 'default',
    extra:
      event === 'pre' ? extra : { ...extra, result: '{"output": "ok", "exit_code": 0}', duration_ms: 12, status: 'ok' },
  });
}

/** Run the hook command as Hermes does: split into argv (no shell), JSON on stdin. */
function runHookCommand(
  command: string,
  stdin: string,
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
    child.stdin.end(stdin);
  });
}

describe('extension/origin: who took a restore point, pre without post, requests, hook install', function () {
  this.timeout(120000);
  let tmp: string;
  let home: string;
  let hermes: string;
  let state: string;
  let target: string;
  let store: string;
  const ak = (...args: string[]) => runSidecar(['--state-dir', state, ...args]);
  const list = async (): Promise<RestorePoint[]> => {
    const r = await ak('restore-point', 'list', '--target', target, '--json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as RestorePoint[];
  };

  before(async () => {
    await Promise.all([buildSidecar(), buildHook()]);
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-ext-origin-'));
    home = path.join(tmp, 'home');
    hermes = path.join(home, '.hermes');
    state = path.join(tmp, 'state');
    target = `dir:${home}`;
    store = `hermes:${hermes}`;
    await fs.mkdir(path.join(hermes, 'memories'), { recursive: true });
    await fs.writeFile(path.join(hermes, 'config.yaml'), '# my Hermes\nmodel:\n  default: "x"\n');
    await fs.writeFile(path.join(hermes, 'memories', 'MEMORY.md'), 'User prefers uv');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  /** store.describe through the core, as the extension gets it from the sidecar. */
  async function describe(stores: string[]): Promise<StoreDescription[]> {
    return call(new Core({ stateDir: state }), 'storeDescribe', { stores });
  }

  /** Install with the argv the extension builds; returns the hook command from config.yaml. */
  async function install(): Promise<string> {
    const { candidates, skipped } = hookCandidates(await describe([store]));
    assert.deepEqual(skipped, []);
    assert.equal(candidates.length, 1);
    assert.deepEqual(
      { kind: candidates[0]!.kind, dir: candidates[0]!.dir },
      { kind: 'hermes', dir: hermes },
      'the Hermes home comes from the store description',
    );
    const agent = hookAgentName('hermes', { target, stores: [store] }, []);
    assert.equal(agent, 'hermes');
    const args = hookInstallArgs(candidates[0]!, { agent, target, stores: [store], mcp: true, stateDir: state });
    const r = await runSidecar(args);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const out = parseHookInstallOutput(r.stdout);
    assert.ok('ok' in out, r.stdout);
    assert.equal(out.ok.changed, true);
    assert.match(out.ok.message, /Added 6 hook entries .* and the MCP server mcp_servers\.agentkeep/);
    assert.ok(
      out.ok.notes.some((n) => /first-use consent/.test(n) && /HERMES_ACCEPT_HOOKS=1/.test(n)),
      "Hermes' first-use consent note comes back for the editor to show",
    );
    assert.equal(out.ok.stateDir, state);
    assert.equal(out.ok.agent?.target, target);
    const cfg = readFileSync(path.join(hermes, 'config.yaml'), 'utf8');
    assert.ok(cfg.startsWith('# my Hermes\nmodel:\n  default: "x"\n'), 'the user lines stay');
    const m = /command: (.*hook run hermes.*)$/m.exec(cfg);
    assert.ok(m, cfg);
    return m[1]!.replace(/^"|"$/g, '');
  }

  it('a hook restore point reads "by the agent NAME in session …: COMMAND" with its own icon; a pre without post is flagged as the CLI flags it', async () => {
    const command = await install();
    const session = 'sess_3f2a9c81d0e4';
    const pip = { command: 'pip install requests' };
    // a pair (pre and post of tool call c1), then a pre whose post never comes (tool call c2: the agent died)
    for (const [ev, id, input] of [
      ['pre', 'c1', pip],
      ['post', 'c1', pip],
      ['pre', 'c2', { command: 'apt-get install -y jq' }],
    ] as const) {
      const r = await runHookCommand(command, hermesPayload(ev, 'terminal', input, session, id));
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /block/);
    }
    const rps = await list();
    assert.equal(rps.length, 3);
    const [lone, post, pre] = rps; // newest first
    assert.equal(post!.kind, 'post');
    assert.equal(post!.pairOf, pre!.id);
    const v = originView(pre!);
    assert.ok(v);
    assert.equal(v.origin, 'hook');
    assert.equal(v.icon, ORIGIN_ICONS.hook);
    assert.equal(v.text, 'by the agent hermes in session sess_3f2…: pip install requests');
    assert.equal(formatReason(pre!), v.text, 'tooltips and the details view say the same');
    // the pre-without-post verdict is the CLI's (restore-point list: "pre without post: …")
    for (const rp of rps)
      assert.equal(
        isPreWithoutPost(rp, rps),
        kindText(rp, rps) === CLI_PRE_WITHOUT_POST,
        `${rp.id} (${rp.kind}): the extension and the CLI agree`,
      );
    assert.equal(isPreWithoutPost(lone!, rps), true);
    assert.equal(isPreWithoutPost(pre!, rps), false);
    const text = (await ak('restore-point', 'list', '--target', target)).stdout;
    assert.match(
      text.split('\n').find((l) => l.startsWith(lone!.id))!,
      /pre without post/,
    );

    const flagged = rpItemView(lone!, true);
    assert.equal(flagged.icon, 'warning');
    assert.match(
      flagged.description,
      /no post: did not finish · by the agent hermes in session sess_3f2…: apt-get install -y jq$/,
    );
    const paired = rpItemView(pre!, false);
    assert.equal(paired.icon, 'plug');
    assert.doesNotMatch(paired.description, /no post/);
    const why = preWithoutPostText(lone!);
    assert.match(why, /`apt-get install -y jq`/);
    assert.match(why, /the tool call, the agent or its hook died/);
    assert.match(why, /Compare with Now shows it; Restore puts the machine back/);

    // the notification: nothing on the first look, then the agent's new restore point
    assert.deepEqual(newAgentRestorePoints(undefined, rps), []);
    const known = new Set(rps.slice(1).map((r) => r.id));
    const news = newAgentRestorePoints(known, rps);
    assert.deepEqual(
      news.map((r) => r.id),
      [lone!.id],
    );
    assert.match(agentRestorePointMessage(news), /^AgentKeep: restore point ".*" taken by the agent hermes in session/);
  });

  it('agentkeep run, the MCP tool and the apt hook each have their icon and sentence; a manual one has none', async () => {
    const r = await ak('run', '--target', target, '--store', store, '--json', '--', 'true');
    assert.equal(r.code, 0, r.stderr);
    const core = new Core({ stateDir: state });
    // as sidecar/hooks/mcp.ts and sidecar/hooks/aptRun.ts write them
    await call(core, 'restorePointCreate', {
      target,
      kind: 'manual',
      label: 'before pip install torch',
      reason: {
        origin: 'mcp',
        agent: 'hermes',
        tool: 'restore_point_create',
        text: 'by the agent hermes: before pip install torch',
      },
    });
    await call(core, 'restorePointCreate', {
      target,
      kind: 'pre',
      label: 'install jq',
      reason: { command: 'apt-get install -y jq', text: 'install jq (1.6-2.1)', origin: 'apt', agent: 'hermes' },
    });
    await call(core, 'restorePointCreate', { target, kind: 'manual', label: 'by hand' });
    const rps = await list();
    const by = (o: string | undefined) => rps.filter((x) => x.reason?.origin === o);
    const run = by('run');
    assert.equal(run.length, 2, 'agentkeep run: a pre and a post');
    assert.equal(originView(run[0]!)?.icon, 'terminal');
    assert.match(originView(run[0]!)!.text, /^by agentkeep run.*: true$/);
    assert.equal(originView(by('mcp')[0]!)?.icon, 'hubot');
    assert.equal(originView(by('mcp')[0]!)?.text, 'by the agent hermes: before pip install torch');
    assert.equal(originView(by('apt')[0]!)?.icon, 'package');
    assert.equal(originView(by('apt')[0]!)?.text, 'by apt (agent hermes): install jq (1.6-2.1)');
    const manual = rps.find((x) => x.label === 'by hand')!;
    assert.equal(originView(manual), undefined);
    assert.equal(rpItemView(manual, false).icon, 'history');
    assert.equal(new Set(Object.values(ORIGIN_ICONS)).size, 4, 'a distinct codicon per origin');
    // the lone apt pre (no Post-Invoke) says what to check
    assert.ok(isPreWithoutPost(by('apt')[0]!, rps));
    assert.match(preWithoutPostText(by('apt')[0]!), /dpkg --audit/);
    assert.equal(
      isPreWithoutPost(
        run.find((x) => x.kind === 'pre')!,
        rps,
      ),
      false,
    );
  });

  it('a restore request row names the agent, the restore point, the scope and the reason; decided ones are not pending', async () => {
    const core = new Core({ stateDir: state });
    const rp = await call(core, 'restorePointCreate', { target, kind: 'manual', label: 'before the upgrade' });
    const req = await call(core, 'requestCreate', {
      target,
      restorePoint: rp.id,
      scope: 'agent',
      reason: 'my memory got corrupted by a bad edit',
      agent: 'hermes',
      session: 'sess_3f2a9c81d0e4',
    });
    const v = requestView(req, rp, Date.parse(req.createdAt) + 5 * 60_000);
    assert.equal(v.label, 'hermes asks to restore "before the upgrade"');
    assert.equal(v.description, 'scope agent · 5m ago · my memory got corrupted by a bad edit');
    assert.equal(v.contextValue, 'restoreRequest.pending');
    assert.match(v.tooltip, /in session sess_3f2… asked 5m ago/);
    assert.match(v.tooltip, /Approve shows what the restore would change and asks before it restores/);
    const denied = await call(core, 'requestDeny', { id: req.id, note: 'fix it by hand' });
    const d = requestView(denied, rp);
    assert.equal(d.contextValue, 'restoreRequest.denied', 'no Approve/Deny on a decided request');
    assert.match(d.tooltip, /denied .*: fix it by hand/);
    assert.deepEqual(await call(core, 'requestList', { target, status: 'pending' }), []);
  });

  it('hook install: which agent, which stores can get a hook, and the CLI error comes back as an error', async () => {
    const stores = await describe([
      store,
      `agent-zero:${path.join(tmp, 'a0')}`,
      `hermes:ssh://me@host/home/me/.hermes`,
    ]);
    const { candidates, skipped } = hookCandidates([...stores, { store: 'mem0:x', error: 'no such store kind' }]);
    assert.deepEqual(
      candidates.map((c) => c.kind),
      ['hermes', 'agent-zero'],
    );
    assert.equal(skipped.length, 2);
    assert.match(skipped[0]!, /not on this machine/);
    // never re-point someone else's agent
    const agents = [{ name: 'hermes', target: 'dir:/elsewhere', stores: [] }];
    assert.equal(hookAgentName('hermes', { target, stores: [store] }, agents), 'hermes-2');
    assert.equal(
      hookAgentName('hermes', { target, stores: [store] }, [...agents, { name: 'mine', target, stores: [store] }]),
      'mine',
    );
    const a0 = hookInstallArgs(candidates[1]!, { agent: 'a0', target, stores: [], mcp: true });
    assert.deepEqual(a0.slice(0, 5), ['hook', 'install', 'agent-zero', '--root', path.join(tmp, 'a0')]);
    assert.ok(!a0.includes('--mcp'), 'Agent Zero registers MCP in its own settings');
    const r = await runSidecar([...a0, '--state-dir', state]);
    assert.notEqual(r.code, 0);
    const out = parseHookInstallOutput(r.stdout);
    assert.ok('error' in out);
    assert.match(out.error.message, /is not an Agent Zero folder .*nothing was changed/);
    assert.throws(() => parseHookInstallOutput('oops'), /printed no JSON: oops/);
    const settings = JSON.parse(
      agentZeroMcpSettings({ node: '/usr/bin/node', sidecar: SIDECAR, agent: 'a0', stateDir: state }),
    );
    assert.deepEqual(settings.mcpServers.agentkeep.args, [SIDECAR, 'mcp', '--agent', 'a0', '--state-dir', state]);
    assert.equal(shortSession('abc'), 'abc');
  });

  it('package.json: the new commands are contributed, registered, in the Agent view menus, and the setting is off by default', () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    const cmds = new Map<string, { enablement?: string }>(
      pkg.contributes.commands.map((c: { command: string }) => [c.command, c]),
    );
    const src = ['commands.ts', 'memory.ts']
      .map((f) => readFileSync(path.join(REPO, 'extension', f), 'utf8'))
      .join('\n');
    for (const id of ['agentkeep.approveRequest', 'agentkeep.denyRequest', 'agentkeep.protectAgent']) {
      assert.ok(cmds.has(id), `${id} contributed`);
      assert.equal(cmds.get(id)!.enablement, 'isWorkspaceTrusted', `${id} needs workspace trust`);
      assert.ok(src.includes(`reg('${id}'`), `${id} registered`);
    }
    // every command a menu names is contributed
    for (const [menu, items] of Object.entries(pkg.contributes.menus as Record<string, Array<{ command: string }>>))
      for (const it of items) assert.ok(cmds.has(it.command), `${menu}: ${it.command} is contributed`);
    const ctx: Array<{ command: string; when: string; group: string }> = pkg.contributes.menus['view/item/context'];
    for (const id of ['agentkeep.approveRequest', 'agentkeep.denyRequest']) {
      const inline = ctx.find((m) => m.command === id && m.group.startsWith('inline'));
      assert.ok(inline && /viewItem == restoreRequest\.pending/.test(inline.when), `${id} inline on pending requests`);
      assert.ok(
        ctx.some((m) => m.command === id && !m.group.startsWith('inline')),
        `${id} in the context menu`,
      );
    }
    const title: Array<{ command: string; group: string }> = pkg.contributes.menus['view/title'];
    assert.ok(
      title.some((m) => m.command === 'agentkeep.protectAgent' && !m.group.startsWith('navigation')),
      "Protect this agent's own changes is in the Agent view's overflow menu",
    );
    assert.equal(pkg.contributes.configuration.properties['agentkeep.notifyAgentRestorePoints'].default, false);
  });
});
