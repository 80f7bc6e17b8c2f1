/**
 * Where a store on another machine is: the `ssh://[user@]host[:port]/abs/path` part of a store
 * string such as `hermes:ssh://root@10.0.0.5/root/.hermes` (options after `?`: `identity=/abs/key`,
 * `known_hosts=/abs/file`, plus the kind's own). No I/O.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';

/** The place part of an ssh:// store string, for help texts: `<kind>:` + this. */
export const SSH_STORE_FORM = 'ssh://user@host[:port]/abs/path';

/** The SSH options every store kind takes after `?` in an ssh:// store string. */
export const SSH_OPTIONS = ['identity', 'known_hosts'] as const;

/** A parsed ssh:// location. */
export interface SshLocation {
  /** Login name (default: the sidecar's user, as OpenSSH does). */
  user: string;
  /** Host name or address as given (IPv6 without brackets). */
  host: string;
  /** TCP port (default 22). */
  port: number;
  /** Absolute path on that machine (normalised, no trailing slash). */
  path: string;
  /** Private key file to log in with (`?identity=`); default: the SSH agent, then ~/.ssh/id_ed25519, id_rsa... */
  identity?: string;
  /** known_hosts file to check the host key against (`?known_hosts=`); default ~/.ssh/known_hosts. */
  knownHosts?: string;
}

/** Whether the part after `<kind>:` names a store on another machine. */
export function isSshLocation(rest: string): boolean {
  return /^ssh:\/\//i.test(rest);
}

/** `host` or `[host]` for IPv6, with `:port` when not 22: how OpenSSH writes a host in known_hosts. */
export function hostKeyName(host: string, port: number): string {
  if (port === 22) return host.includes(':') ? `[${host}]` : host;
  return `[${host}]:${port}`;
}

/** `ssh://user@host:port/path`, the canonical form (always with user and port): a store's location. */
export function sshUrl(l: Pick<SshLocation, 'user' | 'host' | 'port'>, p: string): string {
  const host = l.host.includes(':') ? `[${l.host}]` : l.host;
  return `ssh://${encodeURIComponent(l.user)}@${host}:${l.port}${p.split('/').map(encodeURIComponent).join('/')}`;
}

/** `user@host:port` for messages. */
export function sshWhere(l: Pick<SshLocation, 'user' | 'host' | 'port'>): string {
  return `${l.user}@${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`;
}

/**
 * Parse `ssh://[user@]host[:port]/abs/path` and the SSH options of `params`.
 * @param url the location without options, e.g. `ssh://root@10.0.0.5:2222/root/.hermes`
 * @param params the options after `?` (identity, known_hosts; others are the kind's to check)
 * @param form the store form for the hint, e.g. `hermes:ssh://user@host[:port]/abs/path/to/.hermes`
 * @throws AgentKeepError BadStore naming the wrong part (no host, bad port, relative path or key file)
 */
export function parseSshLocation(url: string, params: URLSearchParams, spec: string, form: string): SshLocation {
  const bad = (what: string): AgentKeepError =>
    new AgentKeepError(
      'BadStore',
      `Bad SSH location in store "${spec}": ${what}.`,
      `Use ${form}, e.g. ${form.replace(/user@host\[:port\]/, 'root@10.0.0.5')}.`,
    );
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad('it does not parse as ssh://user@host[:port]/path');
  }
  if (u.protocol.toLowerCase() !== 'ssh:') throw bad(`the scheme is ${u.protocol} (not ssh:)`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!host) throw bad('no host');
  if (u.password) throw bad('a password in the URL (AgentKeep logs in with keys only: the SSH agent or ?identity=)');
  const port = u.port ? Number(u.port) : 22;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw bad(`port ${u.port} is not 1-65535`);
  let p: string;
  try {
    p = decodeURIComponent(u.pathname);
  } catch {
    throw bad('the path is not valid URL encoding');
  }
  if (!p || p === '/' || p.startsWith('/~')) {
    throw bad(p.startsWith('/~') ? 'a path relative to the home directory (~)' : 'no path after the host');
  }
  const abs = (name: string, v: string | null): string | undefined => {
    if (!v) return undefined;
    if (!path.isAbsolute(v)) throw bad(`?${name}=${v} is not an absolute path on this machine`);
    return path.resolve(v);
  };
  return {
    user: u.username ? decodeURIComponent(u.username) : os.userInfo().username,
    host,
    port,
    path: path.posix.normalize(p).replace(/\/+$/, '') || '/',
    identity: abs('identity', params.get('identity')),
    knownHosts: abs('known_hosts', params.get('known_hosts')),
  };
}
