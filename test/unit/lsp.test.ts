import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
  type CodeLens,
  ResponseError,
} from 'vscode-languageserver/node';
import { buildSidecar, startSidecar } from './helpers/sidecar';

describe('agentkeep serve --stdio (LSP)', function () {
  let tmp: string;
  let agent: string;
  let child: ChildProcess;
  let conn: MessageConnection;
  let stderr = '';
  const notes: Array<{ method: string; params: any }> = [];

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-lsp-'));
    agent = path.join(tmp, 'agent');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'one\n§\ntwo');
    child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
    stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    notes.length = 0;
    conn.onNotification((method: string, params: unknown) => {
      notes.push({ method, params });
    });
    conn.listen();
  });

  afterEach(async () => {
    conn.dispose();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });

  /** initialize as the VS Code extension does (clientCommands: true), or as another editor. */
  async function initialize(
    init: Record<string, unknown> = { clientCommands: true },
    clientInfo?: object,
  ): Promise<any> {
    const r = await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(agent).href,
      capabilities: {},
      initializationOptions: init,
      ...(clientInfo ? { clientInfo } : {}),
    });
    await conn.sendNotification('initialized', {});
    return r;
  }

  it('initializes with full sync and resolvable CodeLens; returns two lenses per risky line', async () => {
    const init = await initialize();
    assert.equal(init.capabilities.textDocumentSync, 1);
    assert.deepEqual(init.capabilities.codeLensProvider, { resolveProvider: true });
    assert.equal(init.serverInfo.name, 'agentkeep');

    const file = path.join(agent, 'workspace', 'setup.sh');
    const uri = pathToFileURL(file).href;
    const text = '#!/bin/sh\nset -e\nnpm install left-pad\necho done\n';
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'shellscript', version: 1, text },
    });
    const lenses = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.equal(lenses.length, 2);
    assert.ok(
      lenses.every((l) => !l.command),
      'range-only lenses; commands come from codeLens/resolve',
    );
    const resolved = await Promise.all(lenses.map((l) => conn.sendRequest('codeLens/resolve', l) as Promise<CodeLens>));
    // the argument carries the reason, and the resolved command shows it as its tooltip (issue 15)
    const arg = {
      command: 'npm install left-pad',
      file,
      uri,
      line: 3,
      endLine: 3,
      class: 'deps',
      reason: 'deps: npm install changes project dependencies',
    };
    assert.deepEqual(
      resolved.map((l) => [
        l.range.start.line,
        l.command?.title,
        l.command?.command,
        l.command?.arguments,
        l.command?.tooltip,
      ]),
      [
        [
          2,
          '$(history) Snapshot & run',
          'agentkeep.snapshotAndRun',
          [arg],
          'Take a restore point, then run. deps: npm install changes project dependencies',
        ],
        [
          2,
          '$(play) Run',
          'agentkeep.run',
          [arg],
          'Run without a restore point. deps: npm install changes project dependencies',
        ],
      ],
    );
    // resolve keeps the command
    const again = (await conn.sendRequest('codeLens/resolve', {
      range: lenses[0].range,
      data: lenses[0].data,
    })) as CodeLens;
    assert.equal(again.command?.command, 'agentkeep.snapshotAndRun');

    // full sync: an edit moves the lens; an unknown document has none
    await conn.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: '\n\n' + text }],
    });
    const moved = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.equal(moved[0].range.start.line, 4);
    assert.deepEqual(await conn.sendRequest('textDocument/codeLens', { textDocument: { uri: 'file:///nope.sh' } }), []);

    // an untitled document gets its file kind from the languageId
    const untitled = 'untitled:Untitled-1';
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri: untitled, languageId: 'shellscript', version: 1, text: 'pip install requests\n' },
    });
    const uRanged = (await conn.sendRequest('textDocument/codeLens', {
      textDocument: { uri: untitled },
    })) as CodeLens[];
    const u = await Promise.all(uRanged.map((l) => conn.sendRequest('codeLens/resolve', l) as Promise<CodeLens>));
    assert.equal(u.length, 2);
    assert.equal(u[0].command?.arguments?.[0].command, 'pip install requests');
    assert.equal(u[0].command?.arguments?.[0].uri, untitled);
  });

  it('initialize with params {} (no capabilities, no options): treated as a client with none, not an internal error', async () => {
    const r = (await conn.sendRequest('initialize', {})) as any;
    assert.equal(r.serverInfo.name, 'agentkeep');
    assert.deepEqual(r.capabilities.codeLensProvider, { resolveProvider: true });
    assert.ok(r.capabilities.executeCommandProvider, 'no clientCommands: served as another editor');
  });

  it('the VS Code extension (clientCommands) gets no executeCommandProvider; other editors get the server commands', async () => {
    const vs = await initialize();
    assert.equal(vs.capabilities.executeCommandProvider, undefined, 'the extension registers its own commands');
    assert.equal(vs.capabilities.textDocumentSync, 1);
    conn.dispose();
    child.kill();
    await new Promise((r) => child.once('exit', r));
    child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.listen();
    const nvim = await initialize({}, { name: 'Neovim', version: '0.7.2' });
    assert.deepEqual(nvim.capabilities.executeCommandProvider, {
      commands: ['agentkeep.takeRestorePoint', 'agentkeep.restorePointBeforeEdit'],
    });
    assert.deepEqual(nvim.capabilities.codeLensProvider, { resolveProvider: true });
    assert.deepEqual(nvim.capabilities.textDocumentSync, { openClose: true, change: 1, save: { includeText: false } });
  });

  /** Collect window/showMessage notifications and answer window/showMessageRequest with `answer`. */
  function messages(answer?: string): {
    shown: Array<{ type: number; message: string }>;
    asked: Array<{ message: string; actions: Array<{ title: string }> }>;
  } {
    const shown: Array<{ type: number; message: string }> = [];
    const asked: Array<{ message: string; actions: Array<{ title: string }> }> = [];
    conn.onNotification('window/showMessage', (p: { type: number; message: string }) => void shown.push(p));
    conn.onRequest('window/showMessageRequest', (p: { message: string; actions: Array<{ title: string }> }) => {
      asked.push(p);
      return answer === undefined ? null : { title: answer };
    });
    return { shown, asked };
  }

  async function resolvedLenses(uri: string): Promise<CodeLens[]> {
    const ranged = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    return Promise.all(ranged.map((l) => conn.sendRequest('codeLens/resolve', l) as Promise<CodeLens>));
  }

  async function until(what: string, ok: () => boolean, ms = 10000): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('other editors: one plain "Take restore point" lens per block, run by the sidecar (errors and reuse shown)', async () => {
    const msg = messages();
    await initialize({}, { name: 'Neovim', version: '0.7.2' });
    const file = path.join(agent, 'setup.sh');
    const uri = pathToFileURL(file).href;
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'sh', version: 1, text: '#!/bin/sh\nnpm install left-pad\necho done\n' },
    });
    // Neovim 0.7 runs lenses before it resolves them: the codeLens answer carries the command already
    const unresolved = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.deepEqual(
      unresolved.map((l) => [l.range.start.line, l.command?.title, l.command?.command]),
      [[1, 'Take restore point', 'agentkeep.takeRestorePoint']],
    );
    const lenses = await resolvedLenses(uri);
    assert.deepEqual(lenses, unresolved, 'codeLens/resolve gives the same lens');
    assert.ok(!JSON.stringify(lenses).includes('$('), 'no VS Code $(icon) syntax');
    assert.equal(
      lenses[0].command?.tooltip,
      'Take a restore point, then run the command yourself. deps: npm install changes project dependencies',
    );
    const run = (): Promise<any> =>
      conn.sendRequest('workspace/executeCommand', {
        command: lenses[0].command!.command,
        arguments: lenses[0].command!.arguments,
      });

    // no agent set up: not a JSON-RPC error but ok: false, shown as an Error message that says what to do
    const none = await run();
    assert.equal(none.ok, false);
    assert.equal(none.error.code, 'invalid_params');
    assert.match(
      none.message,
      /^AgentKeep: no restore point was taken\. No agent is set up .* agentkeep agent add NAME/,
    );
    await until('the error message', () => msg.shown.length > 0);
    assert.deepEqual(msg.shown.shift(), { type: 1, message: none.message });

    await conn.sendRequest('agentkeep/agent.add', {
      name: 'a',
      target: `dir:${agent}`,
      stores: [`hermes:${agent}`],
    });
    const took = await run();
    assert.equal(took.ok, true, JSON.stringify(took));
    assert.equal(took.reused, false);
    assert.match(
      took.message,
      /^AgentKeep: restore point \S+ taken before `npm install left-pad`\. Now run it\. To roll back: agentkeep restore-point restore \S+ --target /,
    );
    await until('the info message', () => msg.shown.some((m) => m.type === 3));
    assert.deepEqual(
      msg.shown.filter((m) => m.type === 3),
      [{ type: 3, message: took.message }],
    );
    const list = (await conn.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` })) as any[];
    assert.deepEqual(
      list.map((p) => [p.id, p.kind, p.label, p.reason.command, p.reason.line, p.reason.class, p.agent?.[0]?.store]),
      [[took.restorePoint.id, 'manual', 'npm install left-pad', 'npm install left-pad', 2, 'deps', `hermes:${agent}`]],
    );
    // again within a minute, nothing changed: the same restore point, said so
    const again = await run();
    assert.equal(again.reused, true);
    assert.equal(again.restorePoint.id, took.restorePoint.id);
    assert.match(again.message, /using the restore point taken .* nothing changed since/);

    // an argument that does not fit, an unknown command: InvalidParams naming the problem
    await assert.rejects(
      conn.sendRequest('workspace/executeCommand', {
        command: 'agentkeep.takeRestorePoint',
        arguments: [{ file: 'x' }],
      }),
      (e: unknown) => e instanceof ResponseError && e.code === -32602 && /does not fit/.test(e.message),
    );
    await assert.rejects(
      conn.sendRequest('workspace/executeCommand', { command: 'agentkeep.snapshotAndRun', arguments: [] }),
      (e: unknown) =>
        e instanceof ResponseError && e.code === -32602 && /Unknown command "agentkeep.snapshotAndRun"/.test(e.message),
    );
  });

  it('other editors: "Restore point before editing" on risky config files of the agent, and the first-change question', async () => {
    const msg = messages('Take restore point');
    await fs.writeFile(path.join(agent, 'requirements.txt'), 'requests\n');
    // the agent from init_options (a target and its stores), no named agent
    await initialize({ target: `dir:${agent}`, stores: [`hermes:${agent}`] });
    const req = path.join(agent, 'requirements.txt');
    const uri = pathToFileURL(req).href;
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'requirements', version: 1, text: 'requests\n' },
    });
    const [early] = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.equal(early.command?.command, 'agentkeep.restorePointBeforeEdit', 'the command comes with the lens');
    const [lens] = await resolvedLenses(uri);
    assert.deepEqual(
      [lens.range.start.line, lens.command?.title, lens.command?.command, lens.command?.arguments],
      [0, 'Restore point before editing (none yet)', 'agentkeep.restorePointBeforeEdit', [{ file: req }]],
    );
    assert.match(lens.command!.tooltip!, /requirements\.txt pins Python dependencies/);
    // a requirements.txt outside the target is not the agent's: no lens
    const other = pathToFileURL(path.join(tmp, 'elsewhere', 'requirements.txt')).href;
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri: other, languageId: 'requirements', version: 1, text: 'x\n' },
    });
    assert.deepEqual(await resolvedLenses(other), []);

    const r = (await conn.sendRequest('workspace/executeCommand', {
      command: lens.command!.command,
      arguments: lens.command!.arguments,
    })) as any;
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.match(r.message, /^AgentKeep: restore point \S+ taken before editing requirements\.txt\./);
    const [after] = await resolvedLenses(uri);
    assert.equal(after.command?.title, 'Restore point before editing (last: just now)');

    // the first unsaved change since that restore point asks nothing (it was just taken for this file)
    await conn.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: 'requests\nflask\n' }],
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(msg.asked.length, 0);

    // package.json edited for the first time: asked once; "Take restore point" takes one (kind config-edit)
    const pkg = path.join(agent, 'package.json');
    await fs.writeFile(pkg, '{}\n');
    const pkgUri = pathToFileURL(pkg).href;
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri: pkgUri, languageId: 'json', version: 1, text: '{}\n' },
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(msg.asked.length, 0, 'opening asks nothing');
    for (const v of [2, 3])
      await conn.sendNotification('textDocument/didChange', {
        textDocument: { uri: pkgUri, version: v },
        contentChanges: [{ text: `{"v": ${v}}\n` }],
      });
    await until('the question', () => msg.asked.length > 0);
    assert.deepEqual(msg.asked[0].actions, [
      { title: 'Take restore point' },
      { title: 'Not now' },
      { title: "Don't ask again" },
    ]);
    assert.match(
      msg.asked[0].message,
      /^AgentKeep: take a restore point before changing package\.json\? package\.json declares/,
    );
    await until('the restore point', () => msg.shown.some((m) => /before editing package\.json/.test(m.message)));
    const list = (await conn.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` })) as any[];
    assert.deepEqual(
      list.map((p) => [p.kind, p.label]),
      [
        ['config-edit', 'before editing package.json'],
        ['config-edit', 'before editing requirements.txt'],
      ],
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(msg.asked.length, 1, 'asked once');

    // configFilesCodeLens: false hides the lens
    await conn.sendNotification('workspace/didChangeConfiguration', {
      settings: { agentkeep: { configFilesCodeLens: false } },
    });
    assert.deepEqual(await resolvedLenses(uri), []);
  });

  it('other editors: "Don\'t ask again" stops the first-change question; progress and a lens refresh when the client has them', async () => {
    const msg = messages("Don't ask again");
    const progress: string[] = [];
    conn.onRequest('window/workDoneProgress/create', () => null);
    let refreshes = 0;
    conn.onRequest('workspace/codeLens/refresh', () => void refreshes++);
    conn.onNotification(
      '$/progress',
      (p: { value: { kind: string; message?: string } }) =>
        void progress.push(`${p.value.kind}${p.value.message ? `: ${p.value.message}` : ''}`),
    );
    await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(agent).href,
      capabilities: { window: { workDoneProgress: true }, workspace: { codeLens: { refreshSupport: true } } },
      initializationOptions: { target: `dir:${agent}` },
    });
    await conn.sendNotification('initialized', {});
    const edit = async (name: string): Promise<void> => {
      const file = path.join(agent, name);
      await fs.writeFile(file, 'a\n');
      const uri = pathToFileURL(file).href;
      await conn.sendNotification('textDocument/didOpen', {
        textDocument: { uri, languageId: 'x', version: 1, text: 'a\n' },
      });
      await conn.sendNotification('textDocument/didChange', {
        textDocument: { uri, version: 2 },
        contentChanges: [{ text: 'b\n' }],
      });
    };
    await edit('requirements.txt');
    await until('the question', () => msg.asked.length === 1);
    await until('the note', () => msg.shown.length === 1);
    assert.match(msg.shown[0].message, /will not ask again until the editor restarts/);
    await edit('.env');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(msg.asked.length, 1, 'not asked again');
    assert.deepEqual(await conn.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` }), []);

    const r = (await conn.sendRequest('workspace/executeCommand', {
      command: 'agentkeep.restorePointBeforeEdit',
      arguments: [{ file: path.join(agent, '.env') }],
    })) as any;
    assert.equal(r.ok, true, JSON.stringify(r));
    await until('progress end', () => progress.includes('end'));
    assert.deepEqual(progress, ['begin: Taking a restore point: before editing .env', 'end']);
    await until('a lens refresh', () => refreshes === 1);
  });

  it('serves agentkeep/* requests: create, list, memory, errors with {code, hint}; sends notifications', async () => {
    await initialize();
    const target = `dir:${agent}`;
    const rp = (await conn.sendRequest('agentkeep/restorePoint.create', {
      target,
      label: 'via lsp',
      stores: [`hermes:${agent}`],
      progressToken: 'tok1',
    })) as any;
    assert.equal(rp.label, 'via lsp');
    assert.equal(rp.status, 'ready');
    assert.equal(rp.agent[0].store, `hermes:${agent}`);
    const list = (await conn.sendRequest('agentkeep/restorePoint.list', { target })) as any[];
    assert.deepEqual(
      list.map((p) => p.id),
      [rp.id],
    );
    const mem = (await conn.sendRequest('agentkeep/memory.list', { stores: [`hermes:${agent}`] })) as any;
    assert.deepEqual(
      mem.stores[0].entries.map((e: { text: string }) => e.text),
      ['one', 'two'],
    );

    await new Promise((r) => setTimeout(r, 200));
    assert.ok(
      notes.some((n) => n.method === 'agentkeep/changed' && n.params.what === 'restorePoints'),
      `changed notification; got ${JSON.stringify(notes)}`,
    );
    assert.ok(
      notes.some((n) => n.method === 'agentkeep/progress' && n.params.token === 'tok1'),
      'progress notification',
    );

    await assert.rejects(conn.sendRequest('agentkeep/restorePoint.list', { target: 'bogus:/x' }), (e: unknown) => {
      assert.ok(e instanceof ResponseError);
      assert.equal(e.code, -33001);
      assert.equal((e.data as { code: string }).code, 'bad_target');
      assert.ok((e.data as { hint?: string }).hint);
      return true;
    });
    await assert.rejects(
      conn.sendRequest('agentkeep/restorePoint.restore', { target, id: rp.id, scope: 'everything' }),
      (e: unknown) => {
        assert.ok(e instanceof ResponseError);
        assert.equal(e.code, -32602);
        assert.match(e.message, /scope/);
        return true;
      },
    );
    // nothing but JSON-RPC went to stdout (the connection would have failed), and shutdown/exit end the process
    await conn.sendRequest('shutdown');
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    await conn.sendNotification('exit');
    assert.equal(await exited, 0);
  });
});
