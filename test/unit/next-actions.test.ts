/**
 * Structured next actions (NextAction in sidecar/protocol): an error thrown in the core reaches a
 * JSON-RPC client over the real WebSocket server with `data.actions`, the action runs as sent, and
 * the real CLI prints the same action as the equivalent `agentkeep …` command line (and with --json
 * as data). Plus the CLI renderer's mapping of methods and params to commands and flags, and the
 * interrupted-restore warnings' actions in agent.status and restorePoint.create.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createMessageConnection, type MessageConnection } from 'vscode-languageserver/node';
import WebSocket from 'ws';
import { actionsText, cliTargetArgs, commandLine, describeProblem } from '../../sidecar/cli/actions';
import { Core } from '../../sidecar/core/core';
import { resolveStateDir } from '../../sidecar/core/state';
import { parseTarget } from '../../sidecar/core/target';
import { ErrorData, Methods, methodKey, nextAction, NextAction } from '../../sidecar/protocol';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../sidecar/server/wsTransport';
import { put, tempSetup } from './dir-fixtures';
import { buildSidecar, runSidecar, startSidecar, waitForStderr } from './helpers/sidecar';

/** Every action names a real method and its params pass that method's params schema. */
function assertRunnable(actions: NextAction[] | undefined): void {
  assert.ok(actions?.length, 'has actions');
  for (const a of actions) {
    NextAction.parse(a);
    const key = methodKey(a.method ?? '');
    assert.ok(key, `unknown method ${a.method}`);
    assert.ok(
      Methods[key].params.safeParse(a.params).success,
      `params of ${a.title} fit ${a.method}: ${JSON.stringify(a.params)}`,
    );
  }
}

describe('next actions: from the core to a JSON-RPC client and the CLI', function () {
  let s: ReturnType<typeof tempSetup>;
  let child: ChildProcess | undefined;
  const token = 'next-actions-token-0123456789';

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });
  beforeEach(() => {
    s = tempSetup('ak-actions-');
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child!.once('exit', r));
    }
    child = undefined;
    s.cleanup();
  });

  /** Damage the journal entry of `id` (not JSON any more). */
  function damage(id: string): void {
    const dir = path.join(s.state, 'journal', parseTarget(s.target).key);
    fs.writeFileSync(path.join(dir, `${id}.json`), '{ not json');
  }

  it('an error thrown in the core carries data.actions over WebSocket; running the action works; the CLI prints it as a command line', async () => {
    put(s.tree, 'a.txt', 'a');
    const core = new Core({ stateDir: s.state });
    const keep = await core.createRestorePoint({ target: s.target, label: 'keep' });
    const bad = await core.createRestorePoint({ target: s.target, label: 'bad' });
    damage(bad.id);

    const tokenFile = path.join(s.base, 'token');
    fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    child = startSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', tokenFile, '--state-dir', s.state]);
    const url = (await waitForStderr(child, /agentkeep: listening on (ws:\/\/127\.0\.0\.1:\d+)\n/))[1];
    const ws = await new Promise<WebSocket>((resolve, reject) => {
      const w = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
      w.once('open', () => resolve(w));
      w.once('error', reject);
    });
    const conn: MessageConnection = createMessageConnection(
      new WebSocketMessageReader(ws),
      new WebSocketMessageWriter(ws),
    );
    conn.listen();
    await conn.sendRequest('initialize', { processId: null, capabilities: {} });

    // the core's CorruptSnapshot (journal.get) reaches the client with its next action as data
    const err = await conn.sendRequest('agentkeep/restorePoint.diff', { target: s.target, id: bad.id }).then(
      () => assert.fail('diff of a damaged entry must fail'),
      (e: { code: number; message: string; data: unknown }) => e,
    );
    assert.equal(err.code, -33010);
    assert.match(err.message, new RegExp(`The journal entry of ${bad.id} is damaged`));
    const data = ErrorData.parse(err.data);
    assert.equal(data.code, 'corrupt_snapshot');
    assert.deepEqual(data.actions, [
      {
        title: 'Delete the damaged restore point',
        method: 'agentkeep/restorePoint.delete',
        params: { target: s.target, id: bad.id },
        destructive: true,
      },
    ]);
    assertRunnable(data.actions);

    // the CLI prints the same action as the equivalent command line, and with --json as data
    const cli = await runSidecar(['restore-point', 'diff', bad.id, '--target', s.target, '--state-dir', s.state]);
    assert.equal(cli.code, 1);
    const cmd = `agentkeep restore-point delete ${bad.id} --target ${s.target} --state-dir ${s.state} --yes`;
    assert.equal(cli.stderr.trim(), `agentkeep: ${err.message} Delete the damaged restore point with: ${cmd}`);
    assert.equal(commandLine(data.actions![0], { stateDir: s.state }), cmd);
    const asJson = await runSidecar([
      'restore-point',
      'diff',
      bad.id,
      '--target',
      s.target,
      '--state-dir',
      s.state,
      '--json',
    ]);
    assert.deepEqual(JSON.parse(asJson.stdout).error.actions, data.actions);

    // the action runs as sent (what the extension's button does), and the printed command works as printed
    const a = data.actions![0];
    assert.equal(((await conn.sendRequest(a.method!, a.params)) as { deleted: string }).deleted, bad.id);
    const list = (await conn.sendRequest('agentkeep/restorePoint.list', { target: s.target })) as Array<{ id: string }>;
    assert.deepEqual(
      list.map((r) => r.id),
      [keep.id],
    );
    const missing = await conn.sendRequest('agentkeep/restorePoint.keep', { target: s.target, id: bad.id }).then(
      () => assert.fail('keep of a deleted id must fail'),
      (e: { data: unknown }) => ErrorData.parse(e.data),
    );
    assert.deepEqual(missing.actions, [nextAction('List restore points', 'restorePointList', { target: s.target })]);
    conn.dispose();
    ws.close();
    damage(keep.id);
    const again = await runSidecar(['restore-point', 'diff', keep.id, '--target', s.target, '--state-dir', s.state]);
    const printed = /with: (agentkeep .*)$/.exec(again.stderr.trim());
    assert.ok(printed, again.stderr);
    const run = await runSidecar(printed[1].split(' ').slice(1));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await core.listRestorePoints({ target: s.target }), []);
  });

  it('an interrupted restore: agent.status and restorePoint.create carry finish / go back as actions', async () => {
    put(s.tree, 'a.txt', 'a');
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target });
    const undo = await core.createRestorePoint({ target: s.target, kind: 'pre-restore' });
    const dir = path.join(s.state, 'journal', parseTarget(s.target).key);
    // the marker a restore leaves while it writes, of a process that is gone (pid 2^22 + 1 is above pid_max defaults)
    const marker = {
      id: rp.id,
      undo: undo.id,
      scope: 'machine',
      stores: ['hermes:/nowhere'],
      startedAt: new Date().toISOString(),
      pid: 4194305,
      host: os.hostname(),
    };
    fs.writeFileSync(path.join(dir, '.restoring.json'), JSON.stringify(marker));
    const finish = nextAction(
      'Finish the restore',
      'restorePointRestore',
      { target: s.target, id: rp.id, scope: 'machine', stores: ['hermes:/nowhere'] },
      { destructive: true },
    );
    const back = nextAction(
      'Go back',
      'restorePointRestore',
      { target: s.target, id: undo.id, scope: 'both' },
      { destructive: true },
    );
    const st = await core.agentStatus({ target: s.target });
    assert.deepEqual(st.interruptedRestore?.actions, [finish, back]);
    assertRunnable(st.interruptedRestore?.actions);
    const created = await core.createRestorePoint({ target: s.target });
    const notice = created.notices?.find((n) => /never finished/.test(n.message));
    assert.ok(notice, JSON.stringify(created.notices));
    assert.deepEqual(notice.actions, [finish, back]);
    assert.ok(
      created.warnings?.some((w) => /never finished/.test(w) && !/agentkeep /.test(w)),
      'warnings stay as text, without command lines',
    );
    assert.equal(
      describeProblem(notice, { stateDir: resolveStateDir() }).replace(/ --state-dir \S+/g, ''),
      `${notice.message} Finish the restore with: agentkeep restore-point restore ${rp.id} --target ${s.target} --scope machine --store hermes:/nowhere --yes — or go back with: agentkeep restore-point restore ${undo.id} --target ${s.target} --scope both --yes`,
    );
  });

  it('the CLI renderer maps each method and its params to the command and flags', () => {
    const o = { stateDir: resolveStateDir(undefined, {}) }; // the default state dir: no --state-dir
    const line = (a: NextAction, yes?: boolean): string | undefined =>
      commandLine(a, { ...o, ...(yes === undefined ? {} : { yes }) });
    const t = 'dir:/srv/agent one';
    assert.equal(
      line(
        nextAction('x', 'restorePointRestore', {
          target: t,
          id: 'ak_1',
          scope: 'agent',
          stores: ['hermes:/h'],
          start: true,
        }),
      ),
      "agentkeep restore-point restore ak_1 --target 'dir:/srv/agent one' --scope agent --store hermes:/h --start --yes",
    );
    assert.equal(
      line(nextAction('x', 'restorePointRestore', { target: 'dir:/a', id: 'ak_1', scope: 'both' }), false),
      'agentkeep restore-point restore ak_1 --target dir:/a --scope both',
    );
    assert.equal(
      line(nextAction('x', 'restorePointDelete', { target: 'dir:/a', id: 'ak_1' })),
      'agentkeep restore-point delete ak_1 --target dir:/a --yes',
    );
    assert.equal(
      line(
        nextAction('x', 'restorePointPrune', {
          target: 'dir:/a',
          keep: 5,
          keepImportant: 2,
          minAgeMs: 5_400_000,
          dryRun: true,
        }),
      ),
      'agentkeep restore-point prune --target dir:/a --keep 5 --keep-important 2 --min-age 90m --dry-run',
    );
    assert.equal(
      line(nextAction('x', 'restorePointList', { target: 'dir:/a' })),
      'agentkeep restore-point list --target dir:/a',
    );
    assert.equal(
      line(nextAction('x', 'restorePointLabel', { target: 'dir:/a', id: 'ak_1', label: "it's", important: false })),
      "agentkeep restore-point label ak_1 --target dir:/a --label 'it'\\''s' --not-important",
    );
    assert.equal(
      line(nextAction('x', 'memoryEdit', { store: 'hermes:/h', entry: 'abc123', text: 'new text' })),
      "agentkeep memory edit --store hermes:/h --entry abc123 --text 'new text'",
    );
    assert.equal(
      line(nextAction('x', 'memoryAdd', { store: 'hermes:/h', text: 'Likes tea', file: 'user' })),
      "agentkeep memory add --store hermes:/h --file user --text 'Likes tea'",
    );
    assert.equal(
      line(nextAction('x', 'memoryDiff', { target: 'dir:/a', from: 'ak_1', stores: ['hermes:/h'] })),
      'agentkeep memory diff --from ak_1 --target dir:/a --store hermes:/h',
    );
    assert.equal(
      line(nextAction('x', 'memoryList', { stores: ['hermes:/h', 'mem0:/m'] })),
      'agentkeep memory list --store hermes:/h --store mem0:/m',
    );
    // a non-default state dir is named, so the command reaches the same journal
    assert.equal(cliTargetArgs('dir:/a', '/tmp/elsewhere', {}), '--target dir:/a --state-dir /tmp/elsewhere');
    // no CLI command: a method without one, a front-end command, params that do not fit
    assert.equal(line(nextAction('x', 'restorePointKeep', { target: 'dir:/a', id: 'ak_1' })), undefined);
    assert.equal(line({ title: 'Open settings', command: 'openSettings', setting: 'agentkeep.stateDir' }), undefined);
    assert.equal(
      line({
        title: 'x',
        method: 'agentkeep/restorePoint.restore',
        params: { target: 'dir:/a', id: 'ak_1', scope: 'all' },
      }),
      undefined,
    );
    // several actions: one sentence; actions without a command line are left out
    const both = actionsText(
      [
        { title: 'Open settings', command: 'openSettings' },
        nextAction('Undo', 'restorePointRestore', { target: 'dir:/a', id: 'ak_2', scope: 'both' }),
        nextAction('List restore points', 'restorePointList', { target: 'dir:/a' }),
      ],
      o,
    );
    assert.equal(
      both,
      'Undo with: agentkeep restore-point restore ak_2 --target dir:/a --scope both --yes — or list restore points with: agentkeep restore-point list --target dir:/a',
    );
    assert.equal(
      describeProblem({ message: 'Broken.', hint: 'Ids look like ak_….' }, o),
      'Broken. Ids look like ak_….',
    );
  });

  it('no command lines in the core: its errors say what to do in words and as actions', async () => {
    const core = new Core({ stateDir: s.state });
    put(s.tree, 'a.txt', 'a');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const e = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent' }).then(
      () => assert.fail('scope agent without a capture must fail'),
      (x: { hint?: string; actions?: NextAction[] }) => x,
    );
    assert.doesNotMatch(e.hint ?? '', /agentkeep |--/);
    assertRunnable(e.actions);
    assert.deepEqual(
      e.actions?.map((a) => [a.title, a.params?.scope ?? null]),
      [
        ['Restore the files (scope machine)', 'machine'],
        ['List restore points', null],
      ],
    );
  });
});
