/**
 * A real QEMU guest agent for tests: Debian's qemu-ga (fetched by scripts/qemu-ga.sh into
 * test/.cache/qemu-ga) run on this machine with `-m unix-listen -p SOCK`, so the QGA protocol, file
 * handles, guest-exec and its output capture are the real agent's, and the "guest" is this machine.
 * Every agent started is stopped by stopAllQga (and when the test process exits).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { REPO } from './paths';

/** A running qemu-ga. */
export interface TestQga {
  socket: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** The qemu-ga binary (fetched and cached on first use). */
export function qgaBinary(): string {
  return execFileSync('bash', [path.join(REPO, 'scripts', 'qemu-ga.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/** Start qemu-ga listening on `<dir>/qga.sock` (state and pid file in `dir`); resolves once the socket exists. */
export async function startQga(dir: string): Promise<TestQga> {
  await fs.mkdir(path.join(dir, 'state'), { recursive: true });
  const socket = path.join(dir, 'qga.sock');
  await fs.rm(socket, { force: true });
  const child = spawn(
    qgaBinary(),
    ['-m', 'unix-listen', '-p', socket, '-t', path.join(dir, 'state'), '-f', path.join(dir, 'qga.pid')],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  running.add(child);
  const end = Date.now() + 10_000;
  while (!existsSync(socket)) {
    if (child.exitCode !== null || Date.now() > end)
      throw new Error(`qemu-ga did not start (exit ${child.exitCode}): ${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    socket,
    child,
    stop: async () => {
      running.delete(child);
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** Stop every agent these helpers started. */
export async function stopAllQga(): Promise<void> {
  for (const c of [...running]) {
    running.delete(c);
    if (c.exitCode === null) c.kill('SIGKILL');
  }
}

process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});
