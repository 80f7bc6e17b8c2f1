/**
 * Issue 15 item 3: the Hermes hook, end to end with real parts. `hook install hermes` edits a real
 * config.yaml (every other byte kept; remove puts it back byte for byte); the installed command is
 * run as Hermes runs it (from the edited config.yaml: argv split, JSON on stdin) with payloads built
 * the way Hermes builds them (agent/shell_hooks.py _payload_fields: tool_name, tool_input,
 * session_id, cwd, profile, extra = the other invoke_hook kwargs of model_tools.py); and a Python
 * runner does the same with shlex, PyYAML and a timeout (./hooks/hermes_runner.py).
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Core } from '../../sidecar/core/core';
import { acquireLock } from '../../sidecar/core/lock';
import { StateLayout } from '../../sidecar/core/state';
import { resolveTarget } from '../../sidecar/core/target';
import { buildHook, cliRunner, HOOK, type RunResult } from './helpers/sidecar';

/** A Hermes config.yaml as users have them: comments, odd indentation, flow lists, a folded string, a hook of their own. */
export const HERMES_CONFIG = `# Hermes Agent CLI Configuration
_config_version: 50

model:
  # Default model to use
  default: "anthropic/claude-opus-4.6"
  
  provider: "auto"   # trailing comment
  base_url: 'https://openrouter.ai/api/v1'

toolsets: [web, terminal,   skills]
memory:
    memory_char_limit: 2200
    user_char_limit: 1375

# Shell-script hooks
hooks:
  pre_tool_call:
    - matcher: "terminal"
      command: "~/.hermes/agent-hooks/block-rm-rf.sh"
      timeout: 10
  post_tool_call:
  - matcher: "write_file|patch"
    command: "~/.hermes/agent-hooks/auto-format.sh"

mcp_servers:
  github:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github"]
long: >
  folded text
  more
list:
- a
-   b`;

/** Hermes' kwargs of invoke_hook (model_tools.py handle_function_call / _emit_post_tool_call_hook), minus tool_name/args/session_id. */
function extra(
  event: 'pre' | 'post',
  id: string | undefined,
  result = '{"output": "ok", "exit_code": 0}',
): Record<string, unknown> {
  const base: Record<string, unknown> = {
    task_id: 'task_1',
    ...(id !== undefined ? { tool_call_id: id } : {}),
    turn_id: 'turn_1',
    api_request_id: 'req_1',
    middleware_trace: [],
  };
  return event === 'pre'
    ? base
    : { ...base, result, duration_ms: 1234, status: 'ok', error_type: null, error_message: null };
}

/** The stdin JSON Hermes writes (shell_hooks._serialize_payload). */
export function hermesPayload(
  event: 'pre' | 'post',
  tool: string,
  input: Record<string, unknown> | null,
  session: string,
  id?: string,
  cwd = '/home/user/project',
): string {
  return JSON.stringify({
    hook_event_name: event === 'pre' ? 'pre_tool_call' : 'post_tool_call',
    tool_name: tool,
    tool_input: input,
    session_id: session,
    cwd,
    profile: 'default',
    extra: extra(event, id),
  });
}

/** Run a command line the way Hermes does (split into argv, no shell) with `stdin`; resolves with exit code and output. */
export function runHookCommand(command: string, stdin: string, env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const argv = command.split(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('Hermes hook (install into config.yaml, run as Hermes runs it)', function () {
  this.timeout(120000);
  let tmp: string;
  let home: string;
  let state: string;
  let cfg: string;
  const { ak, json } = cliRunner(() => state);

  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-hermes-hook-'));
    home = path.join(tmp, '.hermes');
    state = path.join(tmp, 'state');
    cfg = path.join(home, 'config.yaml');
    await fs.mkdir(path.join(home, 'memories'), { recursive: true });
    await fs.writeFile(cfg, HERMES_CONFIG);
    await fs.writeFile(
      path.join(home, 'memories', 'MEMORY.md'),
      'User prefers uv over pip\n§\nProject uses Python 3.12',
    );
    await fs.writeFile(path.join(home, '.env'), 'OPENROUTER_API_KEY=x\n');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  /** The hook command install wrote (all six entries carry the same one). */
  async function installedCommand(): Promise<string> {
    const doc = parseYaml(await fs.readFile(cfg, 'utf8')) as {
      hooks: Record<string, Array<{ matcher: string; command: string; timeout: number }>>;
    };
    const ours = doc.hooks.pre_tool_call.filter((e) => e.command.includes('hook run hermes'));
    assert.equal(ours.length, 3);
    return ours[0].command;
  }

  it('the hook program stays small: out/hook.js holds the risk classifier, not the core, zod or the YAML parser', async () => {
    const code = await fs.readFile(HOOK, 'utf8');
    assert.ok(code.length < 120 * 1024, `out/hook.js is ${code.length} bytes`);
    for (const heavy of ['ZodType', 'LineCounter', 'node-sqlite3-wasm', 'McpServer'])
      assert.ok(!code.includes(heavy), `out/hook.js bundles ${heavy}`);
    assert.ok(code.includes('hook-full.js'), 'it loads the full part at run time');
  });

  it('install adds the six entries and keeps every other byte; a second install changes nothing; remove restores the file byte for byte', async () => {
    const r = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Added 6 hook entries/);
    assert.match(r.stdout, /shell-hooks-allowlist\.json/);
    assert.match(r.stdout, /--accept-hooks, set HERMES_ACCEPT_HOOKS=1, or put `hooks_auto_accept: true`/);
    const after = await fs.readFile(cfg, 'utf8');
    // every original line is still there, in order, byte for byte: only whole lines were inserted
    const orig = HERMES_CONFIG.split('\n');
    const now = after.split('\n');
    let j = 0;
    for (const line of now) if (j < orig.length && line === orig[j]) j++;
    assert.equal(j, orig.length, 'all original lines kept in order');
    const added = now.length - orig.length;
    assert.equal(added, 18, 'six entries of three lines each');
    const doc = parseYaml(after) as Record<string, any>;
    assert.deepEqual(
      doc.hooks.pre_tool_call[0],
      { matcher: 'terminal', command: '~/.hermes/agent-hooks/block-rm-rf.sh', timeout: 10 },
      "the user's own hook stays first",
    );
    assert.deepEqual(
      doc.hooks.pre_tool_call.slice(1).map((e: any) => e.matcher),
      ['terminal', 'write_file|patch', 'memory'],
    );
    assert.deepEqual(
      doc.hooks.post_tool_call.slice(1).map((e: any) => e.matcher),
      ['terminal', 'write_file|patch', 'memory'],
    );
    for (const e of [...doc.hooks.pre_tool_call.slice(1), ...doc.hooks.post_tool_call.slice(1)]) {
      assert.ok(e.timeout < 60 && e.timeout >= 1, 'timeout below Hermes default of 60 s');
      const argv = e.command.split(' ');
      assert.ok(
        path.isAbsolute(argv[0]) && path.isAbsolute(argv[1]),
        'absolute node and hook paths (Hermes runs shell=False)',
      );
      assert.deepEqual(argv.slice(2), ['hook', 'run', 'hermes', '--agent', 'hermes', '--state-dir', state]);
    }
    assert.equal(doc.long, 'folded text more\n');

    const again = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already in .*nothing changed/);
    assert.equal(await fs.readFile(cfg, 'utf8'), after, 'second install: byte-identical');

    const st = await json('hook', 'status', 'hermes', '--home', home);
    assert.equal(st.hooks[0].installed, true);
    assert.equal(st.hooks[0].entries.length, 6);
    assert.ok(
      st.hooks[0].entries.every((e: any) => e.consent === false),
      'not yet approved in the allowlist',
    );
    assert.deepEqual(
      st.agents.map((a: any) => [a.name, a.target, a.stores]),
      [['hermes', `dir:${home}`, [`hermes:${home}`]]],
    );
    // Hermes' allowlist records consent per (event, command)
    await fs.writeFile(
      path.join(home, 'shell-hooks-allowlist.json'),
      JSON.stringify({
        approvals: st.hooks[0].entries.map((e: any) => ({ event: e.event, command: e.command, approved_at: 'x' })),
      }),
    );
    assert.ok((await json('hook', 'status', '--home', home)).hooks[0].entries.every((e: any) => e.consent === true));

    const rm = await ak('hook', 'remove', 'hermes', '--home', home);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, /byte for byte/);
    assert.equal(await fs.readFile(cfg, 'utf8'), HERMES_CONFIG, 'round trip: byte-identical');
  });

  it("--mcp registers mcp_servers.agentkeep; remove after a user edit cuts out only AgentKeep's entries", async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home, '--mcp')).code, 0);
    let doc = parseYaml(await fs.readFile(cfg, 'utf8')) as Record<string, any>;
    assert.deepEqual(Object.keys(doc.mcp_servers), ['github', 'agentkeep']);
    assert.deepEqual(doc.mcp_servers.agentkeep.args.slice(1), ['mcp', '--agent', 'hermes', '--state-dir', state]);
    // the user edits the file after the install
    const edited = (await fs.readFile(cfg, 'utf8')).replace('provider: "auto"', 'provider: "nous"');
    await fs.writeFile(cfg, edited);
    const rm = await ak('hook', 'remove', 'hermes', '--home', home);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, /only AgentKeep's entries were cut out/);
    assert.equal(await fs.readFile(cfg, 'utf8'), HERMES_CONFIG.replace('provider: "auto"', 'provider: "nous"'));
    doc = parseYaml(await fs.readFile(cfg, 'utf8')) as Record<string, any>;
    assert.deepEqual(Object.keys(doc.mcp_servers), ['github']);
  });

  it('a config.yaml without hooks: gets a hooks block; one with an empty hooks: gets the events under it', async () => {
    await fs.writeFile(cfg, 'model:\n  default: x\n');
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    let doc = parseYaml(await fs.readFile(cfg, 'utf8')) as Record<string, any>;
    assert.equal(doc.hooks.pre_tool_call.length, 3);
    assert.equal((await ak('hook', 'remove', 'hermes', '--home', home)).code, 0);
    assert.equal(await fs.readFile(cfg, 'utf8'), 'model:\n  default: x\n');
    await fs.writeFile(cfg, 'hooks:\nmodel:\n  default: x\n');
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    doc = parseYaml(await fs.readFile(cfg, 'utf8')) as Record<string, any>;
    assert.equal(doc.hooks.post_tool_call.length, 3);
    assert.equal(doc.model.default, 'x');
  });

  it('bad input: a config.yaml that does not parse, a folder that is not a Hermes home, an unknown agent: clear errors, nothing changed', async () => {
    const broken = 'model:\n  default: "x\n  provider: [a, b\n';
    await fs.writeFile(cfg, broken);
    const r = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /config\.yaml does not parse as YAML \(line \d+, column \d+: .*\); nothing was changed\. Fix the file/,
    );
    assert.equal(await fs.readFile(cfg, 'utf8'), broken);
    assert.ok(!existsSync(path.join(state, 'config.json')), 'no agent recorded');
    assert.ok(!existsSync(path.join(state, 'hooks', 'backups')), 'no backup written');

    const notHome = path.join(tmp, 'project');
    await fs.mkdir(notHome);
    const n = await ak('hook', 'install', 'hermes', '--home', notHome);
    assert.equal(n.code, 1);
    assert.match(n.stderr, /is not a Hermes home \(no config\.yaml, memories\/ or state\.db\); nothing was changed/);
    assert.deepEqual(await fs.readdir(notHome), []);

    await fs.writeFile(cfg, HERMES_CONFIG);
    const u = await ak('hook', 'install', 'hermes', '--home', home, '--agent', 'nosuch');
    assert.equal(u.code, 1);
    assert.match(u.stderr, /No agent named "nosuch"/);
    assert.equal(await fs.readFile(cfg, 'utf8'), HERMES_CONFIG);

    const flow = 'hooks: {pre_tool_call: []}\n';
    await fs.writeFile(cfg, flow);
    const f = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(f.code, 1);
    assert.match(f.stderr, /flow style/);
    assert.equal(await fs.readFile(cfg, 'utf8'), flow);
  });

  it('a config.yaml that is a symbolic link (dotfiles): install and remove write through it, the link stays a link', async () => {
    const dotfiles = path.join(tmp, 'dotfiles');
    await fs.mkdir(dotfiles);
    const real = path.join(dotfiles, 'hermes-config.yaml');
    await fs.writeFile(real, HERMES_CONFIG, { mode: 0o640 });
    await fs.chmod(real, 0o640);
    await fs.rm(cfg);
    await fs.symlink(real, cfg);
    const r = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(r.code, 0, r.stderr);
    assert.ok((await fs.lstat(cfg)).isSymbolicLink(), 'config.yaml is still a link');
    assert.equal(await fs.readlink(cfg), real);
    assert.match(await fs.readFile(real, 'utf8'), /hook run hermes/, 'the file it points to got the entries');
    assert.equal((await fs.stat(real)).mode & 0o777, 0o640, 'mode kept');
    assert.deepEqual((await fs.readdir(dotfiles)).sort(), ['hermes-config.yaml'], 'no temp file left beside it');
    const rm = await ak('hook', 'remove', 'hermes', '--home', home);
    assert.equal(rm.code, 0, rm.stderr);
    assert.ok((await fs.lstat(cfg)).isSymbolicLink(), 'still a link after remove');
    assert.equal(await fs.readFile(real, 'utf8'), HERMES_CONFIG, 'the target is back byte for byte');
  });

  it('a config.yaml that is a directory: a clear error with the fix, nothing changed', async () => {
    await fs.rm(cfg);
    await fs.mkdir(cfg);
    const r = await ak('hook', 'install', 'hermes', '--home', home);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /config\.yaml is a directory, not Hermes' config file.*; nothing was changed\. Move it away/,
    );
    assert.doesNotMatch(r.stderr, /EISDIR/);
    assert.ok(!existsSync(path.join(state, 'config.json')), 'no agent recorded');
  });

  it('without --agent, a default agent that does not cover the home is refused (naming --agent and agent add); one that covers it is used', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const h6 = path.join(tmp, 'h6');
    await fs.mkdir(h6);
    await fs.writeFile(path.join(h6, 'config.yaml'), HERMES_CONFIG);
    const r = await ak('hook', 'install', 'hermes', '--home', h6);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`default agent hermes snapshots dir:${home}.*does not cover the Hermes home ${h6}`),
    );
    assert.match(r.stderr, /--agent NAME/);
    assert.ok(r.stderr.includes(`agentkeep agent add h6 --target dir:${h6} --store hermes:${h6}`), r.stderr);
    assert.equal(await fs.readFile(path.join(h6, 'config.yaml'), 'utf8'), HERMES_CONFIG, 'h6 untouched');
    // the fix the message names works
    const add = await ak('agent', 'add', 'h6', '--target', `dir:${h6}`, '--store', `hermes:${h6}`);
    assert.equal(add.code, 0, add.stderr);
    const ok = await ak('hook', 'install', 'hermes', '--home', h6, '--agent', 'h6');
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(await fs.readFile(path.join(h6, 'config.yaml'), 'utf8'), /--agent h6 /);
    // a home inside the default agent's target is covered: fine without --agent
    const inner = path.join(home, 'profiles', 'work');
    await fs.mkdir(inner, { recursive: true });
    await fs.writeFile(path.join(inner, 'config.yaml'), HERMES_CONFIG);
    const inside = await ak('hook', 'install', 'hermes', '--home', inner);
    assert.equal(inside.code, 0, inside.stderr);
  });

  it('a risky terminal call gets a pre and a post restore point paired by tool_call_id, with the agent, session, tool and command in the reason; a harmless one gets nothing', async () => {
    await fs.writeFile(path.join(home, 'app.txt'), 'v1\n');
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const input = { command: 'pip install requests', background: false, timeout: 180 };
    const pre = await runHookCommand(command, hermesPayload('pre', 'terminal', input, 'sess_abc123', 'call_7'));
    assert.equal(pre.code, 0, pre.stderr);
    assert.equal(pre.stdout, '', 'no block');
    await fs.writeFile(path.join(home, 'app.txt'), 'v2\n'); // the tool runs
    const post = await runHookCommand(command, hermesPayload('post', 'terminal', input, 'sess_abc123', 'call_7'));
    assert.equal(post.code, 0, post.stderr);
    const points = await json('restore-point', 'list', '--target', `dir:${home}`);
    assert.equal(points.length, 2);
    const [p2, p1] = points;
    assert.equal(p1.kind, 'pre');
    assert.equal(p2.kind, 'post');
    assert.equal(p2.pairOf, p1.id);
    assert.deepEqual(
      {
        origin: p1.reason.origin,
        agent: p1.reason.agent,
        session: p1.reason.session,
        tool: p1.reason.tool,
        toolCallId: p1.reason.toolCallId,
        command: p1.reason.command,
        class: p1.reason.class,
      },
      {
        origin: 'hook',
        agent: 'hermes',
        session: 'sess_abc123',
        tool: 'terminal',
        toolCallId: 'call_7',
        command: 'pip install requests',
        class: 'deps',
      },
    );
    assert.equal(p1.reason.text, 'by the agent hermes in session sess_abc123 (terminal): pip install requests');
    const table = await ak('restore-point', 'list', '--target', `dir:${home}`);
    assert.match(table.stdout, /by the agent hermes in session sess_abc123 \(terminal\): pip install requests/);
    const cmp = await json('restore-point', 'diff', p1.id, '--target', `dir:${home}`);
    assert.ok(cmp.changed.includes('app.txt'));

    const ls = await runHookCommand(
      command,
      hermesPayload('pre', 'terminal', { command: 'ls -la && git status' }, 'sess_abc123', 'call_8'),
    );
    assert.equal(ls.code, 0);
    assert.equal(ls.stdout + ls.stderr, '', 'a harmless call: no output at all');
    assert.equal((await json('restore-point', 'list', '--target', `dir:${home}`)).length, 2);
  });

  it('pairs by session + tool + input when pre_tool_call has no tool_call_id (older Hermes); write_file of config.yaml and .env is risky, of a project file not', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const input = { path: path.join(home, 'config.yaml'), content: 'model:\n  default: other\n' };
    assert.equal((await runHookCommand(command, hermesPayload('pre', 'write_file', input, 's1'))).code, 0);
    assert.equal((await runHookCommand(command, hermesPayload('post', 'write_file', input, 's1', ''))).code, 0);
    const patch = {
      mode: 'patch',
      patch: `*** Begin Patch\n*** Update File: ${path.join(home, '.env')}\n@@\n-A=1\n+A=2\n*** End Patch`,
    };
    assert.equal((await runHookCommand(command, hermesPayload('pre', 'patch', patch, 's1', 'c2'))).code, 0);
    assert.equal(
      (
        await runHookCommand(
          command,
          hermesPayload('pre', 'write_file', { path: 'src/main.py', content: 'print(1)' }, 's1', 'c3'),
        )
      ).code,
      0,
    );
    const points = await json('restore-point', 'list', '--target', `dir:${home}`);
    assert.deepEqual(points.map((p: any) => [p.kind, p.reason.tool, p.reason.path]).reverse(), [
      ['pre', 'write_file', input.path],
      ['post', 'write_file', input.path],
      ['pre', 'patch', path.join(home, '.env')],
    ]);
    assert.equal(points[1].pairOf, points[2].id);
  });

  it('pairs a pre and a post when only one of them carries the tool_call_id; two calls with different ids do not pair', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const run = async (event: 'pre' | 'post', cmd: string, id?: string): Promise<void> => {
      const r = await runHookCommand(command, hermesPayload(event, 'terminal', { command: cmd }, 's9', id));
      assert.equal(r.code, 0, r.stderr);
    };
    await run('pre', 'pip install v1'); // id on the post only (the QA case)
    await run('post', 'pip install v1', 'call_9');
    await run('pre', 'pip install v2', 'call_10'); // id on the pre only
    await run('post', 'pip install v2');
    await run('pre', 'pip install v3', 'call_11'); // the same input, other ids: other calls
    await run('post', 'pip install v3', 'call_12');
    const points = await json('restore-point', 'list', '--target', `dir:${home}`);
    const byCmd = (c: string, kind: string): any[] =>
      points.filter((p: any) => p.reason?.command === c && p.kind === kind);
    for (const c of ['pip install v1', 'pip install v2']) {
      const [pre] = byCmd(c, 'pre');
      const [post] = byCmd(c, 'post');
      assert.ok(
        pre && post,
        `${c}: a pre and a post, got ${JSON.stringify(points.map((p: any) => [p.kind, p.label]))}`,
      );
      assert.equal(post.pairOf, pre.id, `${c}: the post names its pre`);
    }
    assert.equal(byCmd('pip install v3', 'pre').length, 1);
    assert.equal(byCmd('pip install v3', 'post').length, 0, 'a post with another tool call id is not paired');
    const left = await fs.readdir(path.join(state, 'hooks', 'pending')).catch(() => [] as string[]);
    assert.equal(left.length, 2, `only the unpaired pre of v3 stays pending (under its two keys): ${left.join(', ')}`);
  });

  it("records each memory tool call (file before and after, action, target, session, tool_call_id) in the store's write log", async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const mem = path.join(home, 'memories', 'MEMORY.md');
    const before = await fs.readFile(mem, 'utf8');
    const input = { action: 'add', target: 'memory', content: 'The agent runs on Debian 12' };
    assert.equal((await runHookCommand(command, hermesPayload('pre', 'memory', input, 'sess_m', 'call_m'))).code, 0);
    await fs.writeFile(mem, `${before}\n§\nThe agent runs on Debian 12`); // what tools/memory_tool.py does
    const r = await runHookCommand(command, hermesPayload('post', 'memory', input, 'sess_m', 'call_m'));
    assert.equal(r.code, 0, r.stderr);
    const dir = path.join(state, 'memory-backups');
    const [sub] = await fs.readdir(dir);
    const lines = (await fs.readFile(path.join(dir, sub, 'writes.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.deepEqual(
      {
        source: lines[0].source,
        action: lines[0].action,
        target: lines[0].target,
        session: lines[0].session,
        toolCallId: lines[0].toolCallId,
        text: lines[0].text,
        file: lines[0].file,
      },
      {
        source: 'hook',
        action: 'add',
        target: 'memory',
        session: 'sess_m',
        toolCallId: 'call_m',
        text: 'The agent runs on Debian 12',
        file: mem,
      },
    );
    assert.equal(lines[0].before, before);
    assert.equal(lines[0].after, `${before}\n§\nThe agent runs on Debian 12`);
    assert.equal(
      (await json('restore-point', 'list', '--target', `dir:${home}`)).length,
      0,
      'a memory call takes no restore point',
    );
  });

  it('never breaks the agent: bad stdin lets the call through with one line on stderr', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    for (const bad of ['not json', '', '[1,2]', '{"hook_event_name": "pre_tool_call"}']) {
      const r = await runHookCommand(command, bad);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line for ${JSON.stringify(bad)}: ${r.stderr}`);
      assert.match(r.stderr, /^agentkeep hook: stdin .*; the tool call goes ahead without a restore point\.\n$/);
    }
  });

  it('a wrong-typed tool_input or command, or a tool_input nested too deep: one clear line on stderr each, never a stack trace', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const call = (o: Record<string, unknown>): string =>
      JSON.stringify({
        hook_event_name: 'pre_tool_call',
        tool_name: 'terminal',
        tool_input: { command: 'pip install x' },
        session_id: 's',
        extra: { tool_call_id: 'c1' },
        ...o,
      });
    const deep = call({ tool_input: { command: 'pip install y', x: 0 } }).replace(
      '"x":0',
      `"x":${'['.repeat(200000)}${']'.repeat(200000)}`,
    );
    const cases: [string, string, RegExp][] = [
      ['tool_input string', call({ tool_input: 'pip install x' }), /tool_input is a string, not an object/],
      ['tool_input number', call({ tool_input: 7 }), /tool_input is a number, not an object/],
      ['tool_input array', call({ tool_input: ['pip'] }), /tool_input is an array, not an object/],
      [
        'command number',
        call({ tool_input: { command: 12 } }),
        /tool_input\.command for terminal is a number, not a string/,
      ],
      ['command array', call({ tool_input: { command: ['pip', 'install'] } }), /command for terminal is an array/],
      ['deep nesting', deep, /tool_input nests deeper than \d+ levels/],
    ];
    for (const [name, stdin, why] of cases) {
      const r = await runHookCommand(command, stdin);
      assert.equal(r.code, 0, name);
      assert.equal(r.stdout, '', name);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line for ${name}: ${r.stderr}`);
      assert.match(r.stderr, /^agentkeep hook: stdin.*; the tool call goes ahead without a restore point\.\n$/, name);
      assert.match(r.stderr, why, name);
    }
  });

  it("the hook's stderr lines are clean sentences: a state dir that is a file names the fix; an agent's command with ESC is not echoed raw", async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const command = await installedCommand();
    const risky = hermesPayload(
      'pre',
      'terminal',
      { command: 'rm -rf build\u001b[2J\u001b]0;pwned\u0007' },
      's1',
      'c1',
    );
    const r = await runHookCommand(command, risky);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^agentkeep: restore point \S+ before terminal: rm -rf build\\x1b\[2J\\x1b]0;pwned\\x07\n$/);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    assert.doesNotMatch(r.stderr, /[\u0000-\u0009\u000b-\u001f\u007f]/, 'no control character but the final newline');

    // the state dir the installed command names is now a file
    await fs.rm(state, { recursive: true, force: true });
    await fs.writeFile(state, 'not a directory');
    const f = await runHookCommand(command, risky);
    assert.equal(f.code, 0);
    assert.equal(f.stdout, '', 'fail open: no block');
    assert.equal(f.stderr.trim().split('\n').length, 1, f.stderr);
    assert.equal(
      f.stderr,
      `agentkeep hook: The state dir ${state} is a file, not a directory, so ${path.join(state, 'config.json')} cannot be read; ` +
        `the tool call goes ahead without a restore point. Point --state-dir (or AGENTKEEP_STATE_DIR) at a directory, or move the file ${state} aside.\n`,
    );
    assert.doesNotMatch(f.stderr, /ENOTDIR|'\.;/);
  });

  it('fails open with a warning that list and agent.status show (target unreachable, target busy); fail-closed blocks with Hermes block JSON', async () => {
    // the agent's target goes away after the install (an unmounted disk, a deleted folder)
    await fs.mkdir(path.join(tmp, 'missing'));
    assert.equal(
      (
        await ak(
          'hook',
          'install',
          'hermes',
          '--home',
          home,
          '--agent',
          'gone',
          '--target',
          `dir:${path.join(tmp, 'missing')}`,
        )
      ).code,
      0,
    );
    await fs.rm(path.join(tmp, 'missing'), { recursive: true });
    const command = await installedCommand();
    const pay = hermesPayload('pre', 'terminal', { command: 'sudo apt-get install -y nginx' }, 'sess_x', 'call_x');
    const r = await runHookCommand(command, pay);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '', 'fail open: no block');
    assert.match(r.stderr, /warning: no pre restore point for terminal \(.*\); the call goes ahead/);
    const warnings = (await fs.readFile(path.join(state, 'hooks', 'warnings.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      {
        agent: warnings[0].agent,
        tool: warnings[0].tool,
        session: warnings[0].session,
        phase: warnings[0].phase,
        blocked: warnings[0].blocked,
      },
      { agent: 'gone', tool: 'terminal', session: 'sess_x', phase: 'pre', blocked: false },
    );

    // fail closed: the same call is blocked with a message that says why and what to do
    assert.equal((await ak('hook', 'settings', '--agent', 'gone', '--fail-closed')).code, 0);
    const b = await runHookCommand(command, pay);
    assert.equal(b.code, 0);
    const answer = JSON.parse(b.stdout);
    assert.equal(answer.decision, 'block');
    assert.match(
      answer.reason,
      /could not take a restore point before this terminal call \(.*\), and agent gone is set to fail closed, so the call was blocked and nothing ran\. .*agentkeep hook settings --agent gone --fail-open/,
    );

    // a busy target: its lock is held by another operation
    await fs.mkdir(path.join(tmp, 'busy'));
    assert.equal(
      (
        await ak(
          'hook',
          'install',
          'hermes',
          '--home',
          home,
          '--agent',
          'gone',
          '--target',
          `dir:${path.join(tmp, 'busy')}`,
        )
      ).code,
      0,
    );
    const t = await resolveTarget(`dir:${path.join(tmp, 'busy')}`);
    await fs.mkdir(path.join(state, 'locks'), { recursive: true });
    const lock = await acquireLock(new StateLayout(state).targetLock(t.key), {
      op: 'test holder',
      what: 'test',
      timeoutMs: 1000,
    });
    try {
      assert.equal((await ak('hook', 'settings', '--agent', 'gone', '--fail-open')).code, 0);
      const started = Date.now();
      const busy = await runHookCommand(command, pay, { AGENTKEEP_HOOK_BUDGET_MS: '6000' });
      assert.ok(Date.now() - started < 6000, 'answered within the budget');
      assert.equal(busy.stdout, '');
      assert.match(busy.stderr, /is busy: .*test holder/);
    } finally {
      await lock.release();
    }
    const list = await ak('restore-point', 'list', '--target', `dir:${path.join(tmp, 'busy')}`);
    assert.equal(list.code, 0);
    assert.match(
      list.stderr,
      /agent hook of gone: No pre restore point for terminal sudo apt-get install -y nginx: .*is busy.* \(the call went ahead\)/,
    );
    const status = await new Core({ stateDir: state }).agentStatus({ target: `dir:${path.join(tmp, 'busy')}` });
    assert.equal(status.hookWarnings?.length, 1);
    assert.match(status.hookWarnings![0].message, /is busy/);
  });

  it('the Python runner fires the installed hooks as Hermes does (PyYAML, shlex, JSON on stdin and stdout, timeout)', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', home)).code, 0);
    const steps = [
      {
        event: 'pre_tool_call',
        tool_name: 'terminal',
        args: { command: 'npm install -g @openai/codex' },
        session_id: 'sess_py',
        kwargs: extra('pre', 'call_py'),
      },
      {
        event: 'post_tool_call',
        tool_name: 'terminal',
        args: { command: 'npm install -g @openai/codex' },
        session_id: 'sess_py',
        kwargs: extra('post', 'call_py'),
      },
      {
        event: 'pre_tool_call',
        tool_name: 'terminal',
        args: { command: 'cat README.md' },
        session_id: 'sess_py',
        kwargs: extra('pre', 'call_2'),
      },
      {
        event: 'pre_tool_call',
        tool_name: 'web_search',
        args: { query: 'x' },
        session_id: 'sess_py',
        kwargs: extra('pre', 'call_3'),
      },
    ];
    const stepsFile = path.join(tmp, 'steps.json');
    await fs.writeFile(stepsFile, JSON.stringify(steps));
    const py = spawnSync('python3', [path.join(__dirname, 'hooks', 'hermes_runner.py'), cfg, stepsFile], {
      encoding: 'utf8',
      timeout: 110000,
      env: { ...process.env, HOME: tmp },
    });
    assert.equal(py.status, 0, py.stderr);
    const fired = py.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // the user's own hook (~/.hermes/agent-hooks/block-rm-rf.sh) does not exist: Hermes reports it and goes on; ours fire
    const ours = fired.filter((f) => f.argv[1] === HOOK);
    assert.deepEqual(
      ours.map((f) => [f.event, f.tool, f.matcher]),
      [
        ['pre_tool_call', 'terminal', 'terminal'],
        ['post_tool_call', 'terminal', 'terminal'],
        ['pre_tool_call', 'terminal', 'terminal'],
      ],
    );
    for (const f of ours) {
      assert.equal(f.returncode, 0);
      assert.equal(f.timed_out, false);
      assert.ok(f.elapsed < f.timeout);
      assert.equal(f.parsed, null, 'no block, no invalid stdout');
    }
    const points = await json('restore-point', 'list', '--target', `dir:${home}`);
    assert.deepEqual(
      points.map((p: any) => p.kind),
      ['post', 'pre'],
    );
    assert.equal(
      points[0].reason.text,
      'by the agent hermes in session sess_py (terminal): npm install -g @openai/codex',
    );
  });
});
