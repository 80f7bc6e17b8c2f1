/**
 * A memory store's files on another machine, over SSH (npm ssh2, pure JS: see ./ssh2.ts): SFTP for
 * reading, listing and writing files, exec for the rest (flock, sha256sum, stat, probes).
 *
 * Security: the host key is checked against known_hosts (./knownhosts.ts; `?known_hosts=FILE`, else
 * ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts): an unknown, changed or revoked key is refused
 * with its SHA256 fingerprint and the command that accepts it, never trusted silently. Login with
 * keys only: `?identity=FILE` first, then the SSH agent (SSH_AUTH_SOCK), then (without ?identity)
 * ~/.ssh/id_ed25519, id_ecdsa, id_rsa. The host key algorithms are limited to the key types
 * known_hosts records for the host (as OpenSSH prefers them), so a host that changed its key type
 * is refused as changed rather than accepted under another type.
 *
 * Connections: one per user@host:port (and key options), opened on first use and shared by every
 * store and operation on it; kept while operations run and closed 2 s after the last one (the
 * socket does not keep the process alive while idle). Timeouts: 10 s to connect (TCP + handshake +
 * login), 30 s per operation; each error names the host and the step.
 */
import { createHash } from 'node:crypto';
import { promises as fs, createWriteStream } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AnyAuthMethod, Client, ClientChannel, ConnectConfig, ParsedKey, SFTPWrapper, Stats } from 'ssh2';
import { AgentKeepError } from '../../core/errors';
import type { DirEntry, ExecResult, FileStamp, FileStat, FileTransport, RunningCommand } from './index';
import { shellQuote } from './index';
import { checkHostKey, fingerprint, keyTypeOf, readKnownHosts, recordedTypes, type HostKeyVerdict } from './knownhosts';
import { hostKeyName, sshUrl, sshWhere, type SshLocation } from './location';
import { ssh2 } from './ssh2';

/** Connect (TCP, handshake and login together), ms. */
export const SSH_CONNECT_TIMEOUT_MS = 10_000;
/** One file operation or command, ms. */
export const SSH_OP_TIMEOUT_MS = 30_000;
/** An idle connection is closed after this, ms. */
export const SSH_IDLE_CLOSE_MS = 2_000;
/** Exec channels at once on one connection (OpenSSH MaxSessions is 10, SFTP takes one). */
const MAX_CHANNELS = 6;
/** Files up to this size are hashed here after an SFTP read (bigger: sha256sum on the machine). */
const HASH_HERE_BYTES = 4 << 20;

/** Timeouts of one transport (tests shorten them). */
export interface SshTimeouts {
  connectMs?: number;
  opMs?: number;
}

/** SFTP status codes (draft-ietf-secsh-filexfer-02) → Node error codes. */
const SFTP_CODES: Record<number, string> = { 1: 'EOF', 2: 'ENOENT', 3: 'EACCES', 4: 'EIO', 5: 'EPROTO', 8: 'ENOTSUP' };

/** A Node-style error (`code`) for an SFTP failure, naming the step, the file and the host. */
function sftpError(e: unknown, step: string, shown: string): NodeJS.ErrnoException {
  const raw = e as { code?: number | string; message?: string };
  const code = typeof raw.code === 'number' ? (SFTP_CODES[raw.code] ?? 'EIO') : (raw.code ?? 'EIO');
  const what =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : raw.message || String(e);
  return Object.assign(new Error(`${step} ${shown}: ${what}`), { code });
}

/** stat-like view of SFTP attributes. */
function statOf(s: Stats): FileStat {
  return {
    isFile: () => s.isFile(),
    isDirectory: () => s.isDirectory(),
    isSymbolicLink: () => s.isSymbolicLink(),
    isFIFO: () => s.isFIFO(),
    isSocket: () => s.isSocket(),
    size: s.size,
    mode: s.mode,
    mtimeMs: s.mtime * 1000,
  };
}

/** A small counting semaphore. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r));
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** One SSH connection, shared by the transports of the same user@host:port and key options. */
class Connection {
  active = 0;
  closed = false;
  private idle?: NodeJS.Timeout;
  private sftpP?: Promise<SFTPWrapper>;
  readonly channels = new Slots(MAX_CHANNELS);

  constructor(
    readonly key: string,
    readonly client: Client,
    readonly sock: net.Socket,
    readonly where: string,
  ) {
    const gone = (): void => {
      this.closed = true;
      if (pool.get(key)?.conn === this) pool.delete(key);
    };
    client.on('close', gone);
    client.on('end', gone);
    client.on('error', gone);
  }

  acquire(): void {
    this.active++;
    clearTimeout(this.idle);
    this.sock.ref();
  }

  release(): void {
    if (--this.active > 0 || this.closed) return;
    this.sock.unref();
    this.idle = setTimeout(() => this.close(), SSH_IDLE_CLOSE_MS);
    this.idle.unref();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (pool.get(this.key)?.conn === this) pool.delete(this.key);
    this.client.end();
    this.sock.destroy();
  }

  sftp(): Promise<SFTPWrapper> {
    this.sftpP ??= new Promise<SFTPWrapper>((resolve, reject) => {
      this.client.sftp((err, s) => {
        if (err) {
          this.sftpP = undefined;
          reject(err);
          return;
        }
        s.on('close', () => {
          this.sftpP = undefined;
        });
        resolve(s);
      });
    });
    return this.sftpP;
  }
}

const pool = new Map<string, { conn?: Connection; connecting?: Promise<Connection> }>();

/** Close every SSH connection now (tests; a server shutting down). */
export function closeSshConnections(): void {
  for (const e of [...pool.values()]) e.conn?.close();
  pool.clear();
}

/** Number of open SSH connections (tests: one per host and operation batch). */
export function openSshConnections(): number {
  return [...pool.values()].filter((e) => e.conn && !e.conn.closed).length;
}

/** Host key algorithms ssh2 may negotiate for a recorded key type. */
function algorithmsFor(type: string): string[] {
  if (type === 'ssh-rsa') return ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];
  return [type];
}

/** Host key algorithms ssh2 1.x verifies (lib/protocol/constants.js SUPPORTED_SERVER_HOST_KEY). */
const HOST_KEY_ALGS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
  'ssh-dss',
];

/** ssh-keyscan's name of a key type (-t). */
function keyscanType(type: string): string {
  if (type === 'ssh-ed25519') return 'ed25519';
  if (type.startsWith('ecdsa-')) return 'ecdsa';
  if (type === 'ssh-dss') return 'dsa';
  return 'rsa';
}

/** The default key files, in OpenSSH's order. */
function defaultKeyFiles(): string[] {
  const dir = path.join(os.homedir(), '.ssh');
  return ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((f) => path.join(dir, f));
}

/** A known_hosts path as people type it (~ for the home). */
function tilde(p: string): string {
  const home = os.homedir();
  return p.startsWith(home + path.sep) ? `~${p.slice(home.length)}` : p;
}

/** The login methods to try, and what they are (for messages). @throws AuthFailed (bad key file, none at all) */
async function authMethods(loc: SshLocation): Promise<{ methods: AnyAuthMethod[]; tried: string[] }> {
  const { utils } = ssh2();
  const methods: AnyAuthMethod[] = [];
  const tried: string[] = [];
  const where = sshWhere(loc);
  const keyFile = async (file: string, explicit: boolean): Promise<void> => {
    let data: Buffer;
    try {
      data = await fs.readFile(file);
    } catch (e) {
      if (!explicit) return;
      throw new AgentKeepError(
        'AuthFailed',
        `Cannot read the SSH key ${file} (?identity= of the store for ${where}): ${(e as Error).message}.`,
        'Name a private key file that exists and that this user can read, e.g. ?identity=/home/me/.ssh/id_ed25519.',
      );
    }
    const key = utils.parseKey(data);
    if (key instanceof Error) {
      if (!explicit) return;
      const encrypted = /encrypt|passphrase/i.test(key.message);
      throw new AgentKeepError(
        'AuthFailed',
        encrypted
          ? `The SSH key ${file} is encrypted with a passphrase, which AgentKeep does not ask for.`
          : `${file} is not a private key ssh2 can read: ${key.message}.`,
        encrypted
          ? `Load it into the SSH agent (ssh-add ${file}) and leave out ?identity=, so the agent signs for it.`
          : 'Name an OpenSSH or PEM private key (ed25519, ecdsa or rsa).',
      );
    }
    methods.push({ type: 'publickey', username: loc.user, key: (Array.isArray(key) ? key[0] : key) as ParsedKey });
    tried.push(file);
  };
  if (loc.identity) await keyFile(loc.identity, true);
  const agent = process.env.SSH_AUTH_SOCK;
  if (agent) {
    methods.push({ type: 'agent', username: loc.user, agent });
    tried.push(`the SSH agent (${agent})`);
  }
  if (!loc.identity) for (const f of defaultKeyFiles()) await keyFile(f, false);
  if (!methods.length) {
    throw new AgentKeepError(
      'AuthFailed',
      `No SSH key to log in to ${where} with: no SSH agent (SSH_AUTH_SOCK is not set) and no unencrypted ` +
        `${defaultKeyFiles().map(tilde).join(', ')}.`,
      'Start an agent and add your key (eval $(ssh-agent); ssh-add), or name the key in the store string: ' +
        '?identity=/abs/path/to/key.',
    );
  }
  return { methods, tried };
}

/** The AuthFailed error for a host key known_hosts does not vouch for. */
function hostKeyError(
  loc: SshLocation,
  v: Exclude<HostKeyVerdict, { status: 'known' }>,
  blob: Buffer | undefined,
  files: string[],
): AgentKeepError {
  const name = hostKeyName(loc.host, loc.port);
  const file = tilde(loc.knownHosts ?? files[0]);
  const type = blob ? keyTypeOf(blob) : v.status === 'changed' ? v.lines[0].type : 'ssh-ed25519';
  const fp = blob ? fingerprint(blob) : undefined;
  const presented = blob ? `${type} key ${fp}` : 'no key of a type recorded there';
  const keyscan = `ssh-keyscan -p ${loc.port} -t ${keyscanType(type)} ${loc.host} >> ${file}`;
  const check = `check it on that machine first: ssh-keygen -lf /etc/ssh/ssh_host_${keyscanType(type)}_key.pub`;
  const once = `ssh -p ${loc.port}${loc.knownHosts ? ` -o UserKnownHostsFile=${file}` : ''} ${loc.user}@${loc.host}`;
  if (v.status === 'unknown') {
    return new AgentKeepError(
      'AuthFailed',
      `The host key of ${name} is not in ${files.map(tilde).join(' or ')}: it presents ${presented}. AgentKeep ` +
        'never trusts an unknown host key, so nothing was read or written.',
      `If ${fp} is that host's key (${check}), accept it: ${keyscan} (or connect once with ${once} and answer yes).`,
    );
  }
  if (v.status === 'revoked') {
    return new AgentKeepError(
      'AuthFailed',
      `The host key of ${name} (${presented}) is marked @revoked in ${tilde(v.line.file)} line ${v.line.line}. ` +
        'AgentKeep refuses to connect; nothing was read or written.',
      "Ask the host's admin for its current key; remove the @revoked line only if the revocation was a mistake.",
    );
  }
  const old = v.lines.map((l) => `${l.type} ${fingerprint(l.key)} (${tilde(l.file)} line ${l.line})`).join(', ');
  return new AgentKeepError(
    'AuthFailed',
    `The host key of ${name} CHANGED: it presents ${presented}, but known_hosts records ${old}. Someone may be ` +
      'in the middle, or the host was reinstalled; AgentKeep refuses to connect, and nothing was read or written.',
    `Only if the host really has a new key (${check}): remove the old one with ssh-keygen -R '${name}' -f ${file}, ` +
      `then accept the new one: ${keyscan}.`,
  );
}

/** The error of a TCP connect that failed. */
function socketError(loc: SshLocation, e: NodeJS.ErrnoException): AgentKeepError {
  const where = `${loc.host}:${loc.port}`;
  const why: Record<string, string> = {
    ECONNREFUSED: `${where} refused the connection: no SSH server listens on port ${loc.port}`,
    ENOTFOUND: `the host name ${loc.host} does not resolve`,
    EAI_AGAIN: `the host name ${loc.host} does not resolve (DNS not answering)`,
    EHOSTUNREACH: `${loc.host} is unreachable from here`,
    ENETUNREACH: `the network of ${loc.host} is unreachable from here`,
    ECONNRESET: `${where} closed the connection`,
  };
  return new AgentKeepError(
    'StoreNotFound',
    `Cannot connect to ${where} over SSH: ${why[e.code ?? ''] ?? e.message}.`,
    `Check that the machine is up and sshd runs on port ${loc.port} (ssh -p ${loc.port} ${loc.user}@${loc.host} ` +
      'true), and the host and port in the store string.',
  );
}

/** Open and log in (see the module doc). @throws StoreNotFound (unreachable, timeout), AuthFailed */
async function connect(loc: SshLocation, key: string, timeoutMs: number): Promise<Connection> {
  const where = sshWhere(loc);
  const deadline = Date.now() + timeoutMs;
  const files = loc.knownHosts
    ? [loc.knownHosts]
    : [path.join(os.homedir(), '.ssh', 'known_hosts'), '/etc/ssh/ssh_known_hosts'];
  const lines = await readKnownHosts(files).catch((e: Error) => {
    throw new AgentKeepError(
      'AuthFailed',
      `Cannot read known_hosts ${files.join(', ')}: ${e.message}.`,
      'Fix its permissions so the sidecar can read it.',
    );
  });
  const name = hostKeyName(loc.host, loc.port);
  const types = recordedTypes(lines, name);
  const { methods, tried } = await authMethods(loc);
  const timedOut = (step: string): AgentKeepError =>
    new AgentKeepError(
      'StoreNotFound',
      `SSH to ${where}: ${step} timed out after ${Math.round(timeoutMs / 1000)} s.`,
      `Check that ${loc.host} is up and reachable on port ${loc.port} ` +
        `(ssh -p ${loc.port} ${loc.user}@${loc.host} true).`,
    );
  const sock = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ host: loc.host, port: loc.port, noDelay: true });
    const t = setTimeout(() => {
      s.destroy();
      reject(timedOut('connecting'));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(t);
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(t);
      reject(socketError(loc, e));
    });
  });
  const { Client: ClientC } = ssh2();
  const client = new ClientC();
  let verdict: HostKeyVerdict | undefined;
  let presented: Buffer | undefined;
  const algs = types.flatMap(algorithmsFor).filter((a) => HOST_KEY_ALGS.includes(a));
  const cfg: ConnectConfig = {
    sock,
    username: loc.user,
    readyTimeout: Math.max(1000, deadline - Date.now()),
    authHandler: methods,
    hostVerifier: (blob: Buffer) => {
      presented = blob;
      verdict = checkHostKey(lines, name, blob);
      return verdict.status === 'known';
    },
    ...(algs.length
      ? { algorithms: { serverHostKey: algs as NonNullable<ConnectConfig['algorithms']>['serverHostKey'] } }
      : {}),
  };
  return new Promise<Connection>((resolve, reject) => {
    let done = false;
    const fail = (e: AgentKeepError): void => {
      if (done) return;
      done = true;
      client.end();
      sock.destroy();
      reject(e);
    };
    client.once('ready', () => {
      if (done) return;
      done = true;
      resolve(new Connection(key, client, sock, where));
    });
    client.on('error', (e: Error & { level?: string }) => {
      if (verdict && verdict.status !== 'known') return fail(hostKeyError(loc, verdict, presented, files));
      const msg = e.message ?? String(e);
      if (/no matching host key/i.test(msg) && algs.length) {
        const recorded = lines.filter((l) => !l.marker && types.includes(l.type));
        return fail(hostKeyError(loc, { status: 'changed', lines: recorded }, undefined, files));
      }
      if (e.level === 'client-authentication') {
        return fail(
          new AgentKeepError(
            'AuthFailed',
            `SSH login to ${where} failed: the server accepted none of the keys tried (${tried.join(', ')}).`,
            `Add your public key to ~${loc.user}/.ssh/authorized_keys on ${loc.host} (ssh-copy-id -p ${loc.port} ` +
              `${loc.user}@${loc.host}), or name the right key with ?identity=/abs/path/to/key.`,
          ),
        );
      }
      if (e.level === 'client-timeout') return fail(timedOut('the SSH handshake and login'));
      fail(
        new AgentKeepError(
          'StoreNotFound',
          `SSH to ${where} failed during the handshake: ${msg}.`,
          `Check that port ${loc.port} of ${loc.host} is an SSH server.`,
        ),
      );
    });
    client.on('close', () =>
      fail(
        new AgentKeepError(
          'StoreNotFound',
          `SSH to ${where}: the server closed the connection during the handshake.`,
          `Check sshd's log on ${loc.host}.`,
        ),
      ),
    );
    client.connect(cfg);
  });
}

/** The connection of `loc` (shared; opened on first use). */
async function connectionFor(loc: SshLocation, timeoutMs: number): Promise<Connection> {
  const key = `${sshWhere(loc)}|${loc.identity ?? ''}|${loc.knownHosts ?? ''}`;
  const e = pool.get(key);
  if (e?.conn && !e.conn.closed) return e.conn;
  if (e?.connecting) return e.connecting;
  const entry: { conn?: Connection; connecting?: Promise<Connection> } = {};
  entry.connecting = connect(loc, key, timeoutMs).then(
    (c) => {
      entry.conn = c;
      entry.connecting = undefined;
      return c;
    },
    (err) => {
      if (pool.get(key) === entry) pool.delete(key);
      throw err;
    },
  );
  pool.set(key, entry);
  return entry.connecting;
}

/** A store's files on another machine over SSH. Construct freely (no I/O until the first call). */
export class SshTransport implements FileTransport {
  readonly remote = true;
  readonly where: string;
  readonly user: string;
  private readonly connectMs: number;
  private readonly opMs: number;

  constructor(
    readonly loc: SshLocation,
    timeouts: SshTimeouts = {},
  ) {
    this.where = sshWhere(loc);
    this.user = loc.user;
    this.connectMs = timeouts.connectMs ?? SSH_CONNECT_TIMEOUT_MS;
    this.opMs = timeouts.opMs ?? SSH_OP_TIMEOUT_MS;
  }

  display(abs: string): string {
    return sshUrl(this.loc, abs);
  }

  /** Run `f` on the connection (kept open and referenced meanwhile), within the op timeout. */
  private async use<T>(
    step: string,
    shown: string,
    f: (c: Connection, progress: () => void) => Promise<T>,
    timeoutMs = this.opMs,
  ): Promise<T> {
    const c = await connectionFor(this.loc, this.connectMs);
    c.acquire();
    let timer: NodeJS.Timeout | undefined;
    let moved = false;
    let fail: (e: Error) => void = () => undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        c.close(); // its state is unknown now: the next call connects again
        const s = Math.round(timeoutMs / 1000);
        fail(
          new AgentKeepError(
            'FileError',
            `SSH ${this.where}: ${step} ${shown} ${moved ? `made no progress for ${s} s` : `timed out after ${s} s`}.`,
            `Check the connection to ${this.loc.host} and that the machine is not overloaded, then try again.`,
          ),
        );
      }, timeoutMs);
    };
    // a transfer that keeps moving (progress) is not cut off: the timeout counts from its last chunk
    const progress = (): void => {
      moved = true;
      arm();
    };
    try {
      return await Promise.race([
        f(c, progress),
        new Promise<never>((_, reject) => {
          fail = reject;
          arm();
        }),
      ]);
    } finally {
      clearTimeout(timer);
      c.release();
    }
  }

  /** One SFTP call with Node-style errors. */
  private sftp<T>(
    step: string,
    abs: string,
    call: (s: SFTPWrapper, cb: (err: unknown, v?: T) => void) => void,
  ): Promise<T> {
    const shown = this.display(abs);
    return this.use(step, shown, async (c) => {
      const s = await c.sftp();
      return new Promise<T>((resolve, reject) =>
        call(s, (err, v) => (err ? reject(sftpError(err, step, shown)) : resolve(v as T))),
      );
    });
  }

  stat(abs: string): Promise<FileStat> {
    return this.sftp<Stats>('stat', abs, (s, cb) => s.stat(abs, cb)).then(statOf);
  }

  lstat(abs: string): Promise<FileStat> {
    return this.sftp<Stats>('lstat', abs, (s, cb) => s.lstat(abs, cb)).then(statOf);
  }

  readlink(abs: string): Promise<string> {
    return this.sftp<string>('readlink', abs, (s, cb) => s.readlink(abs, cb));
  }

  realpath(abs: string): Promise<string> {
    return this.sftp<string>('resolve', abs, (s, cb) => s.realpath(abs, cb));
  }

  readFile(abs: string): Promise<Buffer> {
    return this.sftp<Buffer>('read', abs, (s, cb) => s.readFile(abs, cb));
  }

  async readdir(abs: string): Promise<DirEntry[]> {
    const list = await this.sftp<Array<{ filename: string; attrs: Stats }>>('list', abs, (s, cb) => s.readdir(abs, cb));
    return list
      .filter((e) => e.filename !== '.' && e.filename !== '..')
      .map((e) => ({
        name: e.filename,
        isFile: () => e.attrs.isFile(),
        isDirectory: () => e.attrs.isDirectory(),
        isSymbolicLink: () => e.attrs.isSymbolicLink(),
      }));
  }

  /** Small files are read over SFTP and hashed here (no command round trip); big ones with sha256sum there. */
  async hashFile(abs: string): Promise<string> {
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    const st = await this.stat(abs);
    if (st.size <= HASH_HERE_BYTES) return sha(await this.readFile(abs));
    const r = await this.exec(['sha256sum', '-b', '--', abs]);
    const m = /^([0-9a-f]{64})\b/.exec(r.stdout.toString('latin1'));
    if (r.code === 0 && m) return m[1];
    return sha(await this.readFile(abs)); // no sha256sum there
  }

  async stamps(files: readonly string[]): Promise<Array<FileStamp | undefined>> {
    if (!files.length) return [];
    const script = 'for f in "$@"; do stat -L -c "%s %y %i" -- "$f" 2>/dev/null || echo -; done';
    const r = await this.exec(['sh', '-c', script, 'sh', ...files]);
    const lines = r.stdout.toString('utf8').split('\n');
    if (r.code === 0 && lines.length > files.length) {
      return files.map((_, i) => {
        const m = /^(\d+) (.+) (\d+)$/.exec(lines[i]);
        return m ? { size: Number(m[1]), mtime: m[2], ino: m[3] } : undefined;
      });
    }
    // no stat(1) there: SFTP attributes (size and whole-second mtime)
    return Promise.all(
      files.map((f) =>
        this.stat(f).then(
          (st) => ({ size: st.size, mtime: String(st.mtimeMs), ino: '' }),
          (e: NodeJS.ErrnoException) => {
            if (e.code === 'ENOENT') return undefined;
            throw e;
          },
        ),
      ),
    );
  }

  async download(abs: string, dest: string): Promise<void> {
    const shown = this.display(abs);
    await this.use('copy', shown, async (c, progress) => {
      const s = await c.sftp();
      try {
        const src = s.createReadStream(abs);
        src.on('data', progress);
        await pipeline(src, createWriteStream(dest));
      } catch (e) {
        throw sftpError(e, 'copy', shown);
      }
    });
  }

  async writeNew(abs: string, data: Uint8Array | { localFile: string }, mode: number): Promise<void> {
    const shown = this.display(abs);
    await this.use('write', shown, async (c, progress) => {
      const s = await c.sftp();
      const call = <T>(step: string, f: (cb: (err: unknown, v?: T) => void) => void): Promise<T> =>
        new Promise<T>((resolve, reject) =>
          f((err, v) => (err ? reject(sftpError(err, step, shown)) : resolve(v as T))),
        );
      const h = await call<Buffer>('create', (cb) => s.open(abs, 'wx', { mode }, cb));
      try {
        const write = (buf: Buffer, pos: number): Promise<void> =>
          call<void>('write', (cb) => s.write(h, buf, 0, buf.length, pos, cb)).then(progress);
        const CHUNK = 32 * 1024;
        if ('localFile' in data) {
          const src = await fs.open(data.localFile, 'r');
          try {
            const buf = Buffer.alloc(CHUNK);
            for (let pos = 0; ;) {
              const { bytesRead } = await src.read(buf, 0, CHUNK, pos);
              if (!bytesRead) break;
              await write(Buffer.from(buf.subarray(0, bytesRead)), pos);
              pos += bytesRead;
            }
          } finally {
            await src.close();
          }
        } else {
          const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
          for (let pos = 0; pos < b.length; pos += CHUNK) await write(b.subarray(pos, pos + CHUNK), pos);
        }
        await call('chmod', (cb) => s.fchmod(h, mode, cb)); // exact mode, whatever sftp-server's umask
        // fsync@openssh.com where the server offers it
        await call('fsync', (cb) => s.ext_openssh_fsync(h, cb)).catch(() => undefined);
      } finally {
        await call('close', (cb) => s.close(h, cb)).catch(() => undefined);
      }
    });
  }

  async touch(abs: string): Promise<void> {
    const h = await this.sftp<Buffer>('open', abs, (s, cb) => s.open(abs, 'a', cb));
    await this.sftp<void>('close', abs, (s, cb) => s.close(h, cb));
  }

  async rename(from: string, to: string): Promise<void> {
    try {
      // posix-rename@openssh.com: replaces `to` atomically (plain SFTP rename refuses an existing target)
      await this.sftp<void>('rename', from, (s, cb) => s.ext_openssh_rename(from, to, cb));
    } catch (e) {
      if (!/not supported|unsupported/i.test((e as Error).message)) throw e;
      const r = await this.exec(['mv', '-f', '--', from, to]);
      if (r.code !== 0)
        throw Object.assign(new Error(`rename ${this.display(from)}: ${r.stderr.toString().trim()}`), { code: 'EIO' });
    }
  }

  async rm(abs: string, opts: { recursive?: boolean } = {}): Promise<void> {
    const st = await this.lstat(abs).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (!st) return;
    if (st.isDirectory()) {
      if (!opts.recursive) return this.rmdir(abs);
      const r = await this.exec(['rm', '-rf', '--', abs]);
      if (r.code !== 0)
        throw Object.assign(new Error(`remove ${this.display(abs)}: ${r.stderr.toString().trim()}`), { code: 'EIO' });
      return;
    }
    await this.sftp<void>('remove', abs, (s, cb) => s.unlink(abs, cb)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }

  rmdir(abs: string): Promise<void> {
    return this.sftp<void>('remove directory', abs, (s, cb) => s.rmdir(abs, cb));
  }

  async mkdirp(abs: string): Promise<void> {
    const parts = path.posix.normalize(abs).split('/').filter(Boolean);
    let cur = '';
    for (const p of parts) {
      cur += `/${p}`;
      const st = await this.stat(cur).catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return undefined;
        throw e;
      });
      if (st?.isDirectory()) continue;
      const dir = cur;
      await this.sftp<void>('create directory', dir, (s, cb) => s.mkdir(dir, cb));
    }
  }

  chmod(abs: string, mode: number): Promise<void> {
    return this.sftp<void>('chmod', abs, (s, cb) => s.chmod(abs, mode, cb));
  }

  async fsyncDir(): Promise<void> {
    // SFTP has no directory fsync; the file itself was fsynced (fsync@openssh.com) before the rename
  }

  /** The command line sent to the remote shell: `VAR=value` assignments, then the quoted argv. */
  private commandLine(argv: readonly string[], env?: Record<string, string>): string {
    const vars = Object.entries(env ?? {}).map(([k, v]) => `${k}=${shellQuote(v)} `);
    return vars.join('') + argv.map(shellQuote).join(' ');
  }

  /** An exec channel (counted against MAX_CHANNELS). */
  private channel(c: Connection, line: string): Promise<{ ch: ClientChannel; done: () => void }> {
    return c.channels.take().then(
      () =>
        new Promise((resolve, reject) => {
          c.client.exec(line, (err, ch) => {
            if (err) {
              c.channels.give();
              reject(
                new AgentKeepError(
                  'FileError',
                  `SSH ${this.where}: cannot run ${line.slice(0, 80)}: ${err.message}.`,
                  `Check that ${this.loc.user} may run commands on ${this.loc.host} ` +
                    '(no ForceCommand or restricted shell).',
                ),
              );
              return;
            }
            let given = false;
            resolve({
              ch,
              done: () => {
                if (!given) c.channels.give();
                given = true;
              },
            });
          });
        }),
    );
  }

  exec(
    argv: readonly string[],
    opts: { stdin?: Uint8Array; timeoutMs?: number; env?: Record<string, string> } = {},
  ): Promise<ExecResult> {
    const line = this.commandLine(argv, opts.env);
    const run = (c: Connection): Promise<ExecResult> =>
      this.channel(c, line).then(
        ({ ch, done }) =>
          new Promise<ExecResult>((resolve) => {
            const out: Buffer[] = [];
            const err: Buffer[] = [];
            let code: number | null = null;
            let timer: NodeJS.Timeout | undefined;
            if (opts.timeoutMs) timer = setTimeout(() => ch.close(), opts.timeoutMs);
            ch.on('data', (d: Buffer) => out.push(d));
            ch.stderr.on('data', (d: Buffer) => err.push(d));
            ch.on('exit', (c2: number | null) => {
              code = typeof c2 === 'number' ? c2 : null;
            });
            ch.on('close', () => {
              clearTimeout(timer);
              done();
              resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
            });
            ch.end(opts.stdin ? Buffer.from(opts.stdin) : undefined);
          }),
      );
    // an explicit timeout (a probe) ends the command like a local kill: code null; else the op timeout
    return this.use('running', argv[0], run, opts.timeoutMs ? opts.timeoutMs + this.opMs : this.opMs);
  }

  async spawn(argv: readonly string[]): Promise<RunningCommand> {
    const c = await connectionFor(this.loc, this.connectMs);
    c.acquire(); // held until the command ends: a held lock keeps the connection
    let ch: ClientChannel;
    let done: () => void;
    try {
      ({ ch, done } = await this.channel(c, this.commandLine(argv)));
    } catch (e) {
      c.release();
      throw e;
    }
    let code: number | null = null;
    ch.on('exit', (c2: number | null) => {
      code = typeof c2 === 'number' ? c2 : null;
    });
    const exited = new Promise<number | null>((resolve) =>
      ch.on('close', () => {
        done();
        c.release();
        resolve(code);
      }),
    );
    ch.stderr.resume();
    return {
      onStdout: (cb) => ch.on('data', cb),
      exited,
      endStdin: () => ch.end(),
      kill: () => ch.close(),
    };
  }
}
