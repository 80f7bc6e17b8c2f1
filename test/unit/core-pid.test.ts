/**
 * pidAlive (sidecar/core/pid.ts), the one liveness check of locks, hand-off sockets and journal
 * barriers: real processes; and the module stays import-free (the hook's light entry loads it).
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pidAlive } from '../../sidecar/core/pid';
import { pidAlive as lockPidAlive } from '../../sidecar/core/lock';

describe('pidAlive', () => {
  it('is true for a running process and false once it has exited and been reaped', async () => {
    const proc = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const pid = proc.pid!;
    await new Promise((r) => proc.once('spawn', r));
    assert.equal(pidAlive(pid), true);
    assert.equal(pidAlive(process.pid), true);
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    assert.equal(pidAlive(pid), false);
  });

  it('is false for pids that would signal a process group or are not pids at all', () => {
    for (const pid of [0, -1, -process.pid, 1.5, NaN, Infinity]) assert.equal(pidAlive(pid), false, String(pid));
  });

  it('is the same function lock.ts exports, and its module imports nothing (out/hook.js loads it)', () => {
    assert.equal(lockPidAlive, pidAlive);
    const src = fs.readFileSync(path.join(__dirname, '../../sidecar/core/pid.ts'), 'utf8');
    assert.doesNotMatch(src, /^\s*(import|export .* from)\b/m);
    assert.doesNotMatch(src, /\brequire\(/);
  });
});
