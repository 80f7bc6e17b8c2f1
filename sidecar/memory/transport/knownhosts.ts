/**
 * Host key checking against OpenSSH known_hosts files (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"):
 * lines `[@marker] hostpatterns keytype base64-key [comment]`; host patterns comma-separated, with
 * `*` and `?` wildcards and `!` negation, `[host]:port` for a port other than 22, or hashed
 * (`|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, HashKnownHosts yes). `@revoked` keys are
 * refused; `@cert-authority` lines are not used (ssh2 does not check host certificates). Pure
 * functions over text plus a reader of the files.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { promises as fs } from 'node:fs';

/** One key line of a known_hosts file. */
export interface KnownHostLine {
  file: string;
  /** 1-based line number. */
  line: number;
  marker?: 'revoked' | 'cert-authority';
  /** The host patterns field as written. */
  hosts: string;
  /** Key type, e.g. ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256. */
  type: string;
  key: Buffer;
}

/** Parse known_hosts text (comments, blank and malformed lines skipped). */
export function parseKnownHosts(text: string, file: string): KnownHostLine[] {
  const out: KnownHostLine[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const l = raw.trim();
    if (!l || l.startsWith('#')) return;
    const parts = l.split(/\s+/);
    let marker: KnownHostLine['marker'];
    if (parts[0].startsWith('@')) {
      const m = parts.shift()!.slice(1);
      if (m !== 'revoked' && m !== 'cert-authority') return;
      marker = m;
    }
    if (parts.length < 3) return;
    const [hosts, type, b64] = parts;
    const key = Buffer.from(b64, 'base64');
    if (!key.length) return;
    out.push({ file, line: i + 1, ...(marker ? { marker } : {}), hosts, type, key });
  });
  return out;
}

/** Whether one glob pattern (`*`, `?`) matches `name`, case-insensitively (OpenSSH match_pattern). */
function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return re.test(name);
}

/** Whether a hashed pattern `|1|salt|hash` is the HMAC-SHA1 of `name`. */
function hashedMatch(pattern: string, name: string): boolean {
  const m = /^\|1\|([^|]+)\|([^|]+)$/.exec(pattern);
  if (!m) return false;
  const want = Buffer.from(m[2], 'base64');
  const got = createHmac('sha1', Buffer.from(m[1], 'base64')).update(name).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

/**
 * Whether the host patterns field of a line names `name` (`host`, or `[host]:port` for a port
 * other than 22): a hashed field, or a comma list where a matching `!pattern` excludes the line.
 */
export function hostsMatch(hosts: string, name: string): boolean {
  if (hosts.startsWith('|')) return hashedMatch(hosts, name);
  let hit = false;
  for (const p of hosts.split(',')) {
    if (p.startsWith('!')) {
      if (globMatch(p.slice(1), name)) return false;
    } else if (globMatch(p, name)) hit = true;
  }
  return hit;
}

/** The key type written at the start of an SSH public key blob (string type, ...). */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const n = blob.readUInt32BE(0);
  return n > 0 && 4 + n <= blob.length ? blob.subarray(4, 4 + n).toString('latin1') : 'unknown';
}

/** `SHA256:<base64 without padding>`, as ssh-keygen -l and OpenSSH's prompts show it. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** What known_hosts says about a presented host key. */
export type HostKeyVerdict =
  | { status: 'known'; line: KnownHostLine }
  | { status: 'unknown' }
  | { status: 'changed'; lines: KnownHostLine[] }
  | { status: 'revoked'; line: KnownHostLine };

/**
 * Check the key `blob` a host presented under `name` (see hostKeyName) against `lines`: revoked
 * wins, then a line with the same key, else "changed" when the host has keys recorded (of any
 * type: OpenSSH offers the recorded types first, so another type means the host changed too), else
 * "unknown".
 */
export function checkHostKey(lines: readonly KnownHostLine[], name: string, blob: Buffer): HostKeyVerdict {
  const mine = lines.filter((l) => l.marker !== 'cert-authority' && hostsMatch(l.hosts, name));
  const revoked = mine.find((l) => l.marker === 'revoked' && l.key.equals(blob));
  if (revoked) return { status: 'revoked', line: revoked };
  const known = mine.find((l) => !l.marker && l.key.equals(blob));
  if (known) return { status: 'known', line: known };
  const recorded = mine.filter((l) => !l.marker);
  return recorded.length ? { status: 'changed', lines: recorded } : { status: 'unknown' };
}

/** Key types recorded for `name` (to offer those host key algorithms first, as OpenSSH does). */
export function recordedTypes(lines: readonly KnownHostLine[], name: string): string[] {
  return [...new Set(lines.filter((l) => !l.marker && hostsMatch(l.hosts, name)).map((l) => l.type))];
}

/** Read and parse known_hosts files; a missing file has no lines. @throws for other read errors */
export async function readKnownHosts(files: readonly string[]): Promise<KnownHostLine[]> {
  const out: KnownHostLine[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = await fs.readFile(f, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    out.push(...parseKnownHosts(text, f));
  }
  return out;
}
