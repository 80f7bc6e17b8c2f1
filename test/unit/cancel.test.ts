/**
 * $/cancelRequest on the real sidecar (serve --stdio): a cancelled agentkeep/* request is answered at
 * once with RequestCancelled (data.code "cancelled"), and the operation itself goes on and is
 * recorded (the extension says "the task continues"). The create is held on the real target lock,
 * taken by this test process, so the timing is deterministic.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CancellationTokenSource,
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-languageserver/node';
import { acquireLock, type HeldLock } from '../../sidecar/core/lock';
import { StateLayout } from '../../sidecar/core/state';
import { resolveTarget } from '../../sidecar/core/target';
import { buildSidecar, startSidecar } from './helpers/sidecar';

describe('agentkeep serve --stdio: $/cancelRequest', function () {
  let tmp: string;
  let child: ChildProcess;
  let conn: MessageConnection;
  let lock: HeldLock | undefined;
  let stderr = '';

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-cancel-'));
    await fs.mkdir(path.join(tmp, 'agent'), { recursive: true });
    await fs.writeFile(path.join(tmp, 'agent', 'notes.txt'), 'hello');
    child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
    stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.listen();
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
    await conn.sendNotification('initialized', {});
  });

  afterEach(async () => {
    await lock?.release().catch(() => undefined);
    lock = undefined;
    conn.dispose();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('answers a cancelled create at once with RequestCancelled; the create still completes and is listed', async () => {
    const target = `dir:${path.join(tmp, 'agent')}`;
    const lockFile = new StateLayout(path.join(tmp, 'state')).targetLock((await resolveTarget(target)).key);
    await fs.mkdir(path.dirname(lockFile), { recursive: true });
    lock = await acquireLock(lockFile, { op: 'test holds the target', what: 'test target', timeoutMs: 1000 });

    const cts = new CancellationTokenSource();
    const pending = conn.sendRequest('agentkeep/restorePoint.create', { target, label: 'survives cancel' }, cts.token);
    await new Promise((r) => setTimeout(r, 400)); // the sidecar now waits for the lock
    const t0 = Date.now();
    cts.cancel();
    const err = await pending.then(
      () => assert.fail('a cancelled request must not resolve while the lock is held'),
      (e: unknown) => e,
    );
    const waited = Date.now() - t0;
    assert.ok(err instanceof ResponseError, String(err));
    assert.equal(err.code, -32800, 'LSP RequestCancelled');
    assert.equal((err.data as { code?: string } | undefined)?.code, 'cancelled');
    assert.match(err.message, /operation continues/);
    assert.ok(waited < 1500, `answered ${waited} ms after the cancel, not when the work ended`);
    assert.deepEqual(
      await conn.sendRequest('agentkeep/restorePoint.list', { target }),
      [],
      'nothing recorded while it waits',
    );

    await lock.release();
    lock = undefined;
    const end = Date.now() + 15000;
    let listed: Array<{ label: string; status: string }> = [];
    while (Date.now() < end) {
      listed = (await conn.sendRequest('agentkeep/restorePoint.list', { target })) as typeof listed;
      if (listed.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(
      listed.map((r) => [r.label, r.status]),
      [['survives cancel', 'ready']],
      'the cancelled create ran to its end',
    );
    assert.doesNotMatch(stderr, /ended after its request was cancelled/, 'it did not fail');
  });

  it('leaves requests that are not cancelled alone (result, and errors with their own code)', async () => {
    const cts = new CancellationTokenSource();
    const bad = await conn.sendRequest('agentkeep/restorePoint.list', { target: 'dir:relative' }, cts.token).then(
      () => assert.fail('a relative target is refused'),
      (e: unknown) => e as ResponseError<{ code: string }>,
    );
    assert.equal(bad.data?.code, 'bad_target');
    assert.deepEqual(
      await conn.sendRequest('agentkeep/restorePoint.list', { target: `dir:${path.join(tmp, 'agent')}` }, cts.token),
      [],
    );
  });
});
