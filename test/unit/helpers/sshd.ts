/**
 * A private, real OpenSSH server (Debian's openssh-server) for the tests of stores on another
 * machine: started as a child process on 127.0.0.1 and a free port, with a temporary host key, its
 * own sshd_config (no PAM, keys only, AuthorizedKeysFile in the temp dir, StrictModes no) and a
 * temporary client key; a known_hosts file that names the host key. `path` puts directories first on
 * the PATH of the sessions (SetEnv), so the "other machine" has commands this one has not. When
 * sshd is missing and the tests run as root, openssh-server is installed with apt-get (as
 * scripts/setup-test-deps.sh does); otherwise the error names the fix.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

const SSHD = '/usr/sbin/sshd';

/** Install openssh-server when missing (root with apt-get), else throw naming the fix. */
export function ensureSshd(): void {
  if (existsSync(SSHD)) return;
  if (process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get']).status === 0) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
    const r = spawnSync('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=600', 'openssh-server'], {
      stdio: 'ignore',
      env,
    });
    if (r.status === 0 && existsSync(SSHD)) return;
  }
  throw new Error(
    `${SSHD} is missing: install openssh-server (sudo apt-get install -y openssh-server) to run the SSH store tests.`,
  );
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function keygen(file: string, type = 'ed25519'): void {
  const r = spawnSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'agentkeep-test', '-f', file]);
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
}

/** A running test sshd. */
export interface TestSshd {
  port: number;
  dir: string;
  /** The client's private key (authorized on the server). */
  clientKey: string;
  /** known_hosts naming the server's host key as `[127.0.0.1]:port`. */
  knownHosts: string;
  /** The host key line `type base64` (public). */
  hostKey: string;
  /** The login user (the user running the tests). */
  user: string;
  /** `ssh://user@127.0.0.1:port<abs>?identity=…&known_hosts=…` (extra options appended). */
  url(abs: string, extra?: Record<string, string>): string;
  /** Stop the server (sessions still open end when their connections close). */
  stop(): Promise<void>;
  /** Start it again on the same port with another host key (a "reinstalled" host). */
  rekey(): Promise<void>;
  /** Pids of the per-connection sshd processes (children of the listener). */
  sessions(): number[];
  /**
   * The machine goes away (a VM hard-stopped): the listener stops and every open session is killed,
   * so connections drop and new ones are refused. Keys and port stay.
   */
  pause(): Promise<void>;
  /** The machine is back (a VM booted): listening again on the same port with the same host key. */
  resume(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sshd exited ${child.exitCode}: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd did not listen on ${port}: ${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Start a private sshd (see the module doc). `path`: directories put first on the sessions' PATH. */
export async function startSshd(opts: { path?: string[] } = {}): Promise<TestSshd> {
  ensureSshd();
  // sshd's privilege separation directory
  if (process.getuid?.() === 0) await fs.mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-sshd-'));
  const hostKeyFile = path.join(dir, 'host_ed25519');
  const clientKey = path.join(dir, 'client_ed25519');
  keygen(hostKeyFile);
  keygen(clientKey);
  await fs.copyFile(`${clientKey}.pub`, path.join(dir, 'authorized_keys'));
  const port = await freePort();
  const user = os.userInfo().username;
  const knownHosts = path.join(dir, 'known_hosts');
  let child: ChildProcess;
  let log = '';
  let hostKey = '';
  const start = async (): Promise<void> => {
    hostKey = (await fs.readFile(`${hostKeyFile}.pub`, 'utf8')).trim().split(/\s+/).slice(0, 2).join(' ');
    const envPath = [...(opts.path ?? []), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
    const config = [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKeyFile}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      'MaxStartups 50',
      `SetEnv PATH=${envPath}`,
    ].join('\n');
    await fs.writeFile(path.join(dir, 'sshd_config'), config + '\n');
    log = '';
    child = spawn(SSHD, ['-D', '-e', '-f', path.join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    await waitForPort(port, child, () => log);
  };
  const stop = async (): Promise<void> => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await gone;
  };
  const sessions = (): number[] =>
    spawnSync('pgrep', ['-P', String(child.pid)])
      .stdout.toString()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  await start();
  await fs.writeFile(knownHosts, `[127.0.0.1]:${port} ${hostKey}\n`);
  return {
    port,
    dir,
    clientKey,
    knownHosts,
    get hostKey() {
      return hostKey;
    },
    user,
    url: (abs, extra = {}) => {
      const q = new URLSearchParams({ identity: clientKey, known_hosts: knownHosts, ...extra });
      return `ssh://${user}@127.0.0.1:${port}${abs}?${q.toString()}`;
    },
    stop: async () => {
      await stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
    sessions,
    pause: async () => {
      const open = sessions();
      await stop();
      for (const pid of open) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    },
    resume: async () => {
      if (child && child.exitCode === null && child.signalCode === null) return; // still running
      await start();
    },
    rekey: async () => {
      await stop();
      await fs.rm(hostKeyFile, { force: true });
      await fs.rm(`${hostKeyFile}.pub`, { force: true });
      keygen(hostKeyFile);
      await start();
    },
  };
}
