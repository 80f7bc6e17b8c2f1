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
