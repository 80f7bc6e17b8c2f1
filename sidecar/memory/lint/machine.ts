/**
 * Machine probes for the stale rule: does a path exist, is a command installed and at which
 * version, which OS release. Bounded (per-command timeout, overall deadline), cached, no network.
 *
 * - local (no target, or a qemu:/proxmox:// target that cannot be inspected from here → no probe):
 *   paths with ~ expanded to the sidecar user's home, commands found on PATH and run with
 *   `<tool> --version` (argv from claims.ts VERSION_COMMANDS, 2 s timeout), /etc/os-release.
 * - a root directory (dir:/btrfs: target that looks like a root filesystem: has etc/ and usr/):
 *   paths resolved inside it (~ → the same home path inside it), commands looked up in its
 *   bin directories (never run: versions are not checked), its etc/os-release.
 * - any other directory target: only absolute paths inside the target directory itself are checked.
 * - a store on another machine (transportProbe, the store's FileTransport, e.g. SSH): paths (~ → the
 *   agent's home there), commands on that machine's PATH and their versions, its /etc/os-release,
 *   all gathered by one shell script run there.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { binaryOf, parseVersion, VERSION_COMMANDS, type Claim } from './claims';
import type { CommandFact, MachineFacts, PathFact } from './model';
import { shellQuote, type FileTransport } from '../transport';

/** What the stale rule needs from a machine. Injectable for tests. */
export interface MachineProbe {
  /** Human name for messages: "this machine", "dir:/srv/root". */
  readonly where: string;
  /** undefined = cannot tell here (the claim is not judged). */
  path(p: string): Promise<PathFact | undefined>;
  /** `name` is the binary (node, python3 ...); `withVersion` asks for `<tool> --version`. */
  command(name: string, withVersion: boolean): Promise<CommandFact | undefined>;
  os(): Promise<MachineFacts['os'] | undefined>;
  /** What this probe cannot check, in words ("~ paths were not checked: ..."); reported as an info finding. */
  readonly limits?: string;
  /**
   * Gather the facts of all `claims` at once before the per-claim calls (a machine reached over SSH
   * answers them with one command); `deadlineMs` is the time left. Absent: each call probes itself.
   */
  prepare?(claims: Claim[], deadlineMs: number): Promise<void>;
}

/** Whether anything (file, dir, dangling symlink) is at `p`. */
const exists = (p: string): Promise<boolean> =>
  fs.lstat(p).then(
    () => true,
    () => false,
  );

async function readOsRelease(file: string): Promise<MachineFacts['os'] | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const get = (k: string): string | undefined => new RegExp(`^${k}=("?)([^"\\n]*)\\1$`, 'm').exec(text)?.[2];
  const id = get('ID');
  return id ? { id: id.toLowerCase(), versionId: get('VERSION_ID'), detail: file } : undefined;
}

const cache = new Map<string, { at: number; value: unknown }>();
const CACHE_MS = 60_000;
async function cached<T>(key: string, f: () => Promise<T>): Promise<T> {
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.value as T;
  const value = await f();
  cache.set(key, { at: Date.now(), value });
  return value;
}

async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const p = path.join(dir, name);
    try {
      await fs.access(p, 1 /* X_OK */);
      const st = await fs.stat(p);
      if (st.isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

function runVersion(argv: string[], timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      argv[0],
      argv.slice(1),
      { timeout: timeoutMs, maxBuffer: 64 * 1024, env: { ...process.env, LC_ALL: 'C' } },
      (_err, stdout, stderr) => {
        resolve(parseVersion(`${stdout ?? ''}\n${stderr ?? ''}`));
      },
    );
  });
}

/** Why ~ paths are not checked when the agent's home is unknown. */
const NO_HOME =
  '"~/..." paths were not checked: the agent\'s home directory is unknown (the Hermes store path does not end in .hermes, or the stores name different homes), and "~" of the sidecar user would be a different directory.';

/**
 * Probe of the machine the sidecar runs on. `home` is what "~" means: the agent's home (default the
 * sidecar user's home); `null` = unknown, so ~ paths are not judged.
 */
export function localProbe(
  opts: { home?: string | null; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): MachineProbe {
  const home = opts.home === undefined ? os.homedir() : opts.home;
  const env = opts.env ?? process.env;
  const timeoutMs = opts.timeoutMs ?? 2000;
  return {
    where: 'this machine',
    ...(home === null ? { limits: NO_HOME } : {}),
    async path(p) {
      if (p.startsWith('~') && home === null) return undefined;
      const checked = p.startsWith('~/') ? path.join(home ?? '', p.slice(2)) : p;
      return { exists: await exists(checked), checked };
    },
    command(name, withVersion) {
      return cached(`local:${env.PATH ?? ''}:${name}:${withVersion}`, async () => {
        const found = await onPath(name, env);
        if (!found) return { found: false, detail: 'not on PATH' };
        const argv = [...VERSION_COMMANDS.values()].find((a) => a[0] === name) ?? [name, '--version'];
        const version = withVersion ? await runVersion([found, ...argv.slice(1)], timeoutMs) : undefined;
        return {
          found: true,
          ...(version ? { version } : {}),
          detail: withVersion ? `${found} ${argv.slice(1).join(' ')}` : found,
        };
      });
    },
    os: () => readOsRelease('/etc/os-release'),
  };
}

const BIN_DIRS = ['usr/local/bin', 'usr/bin', 'bin', 'usr/sbin', 'sbin'];

/**
 * Probe of a directory target. `root` is the target path; when it looks like a root filesystem
 * (etc/ and usr/ inside), absolute paths, ~ paths (the sidecar user's home path inside it), bin
 * directories and etc/os-release are read inside it; otherwise only absolute paths under `root`.
 */
export async function dirProbe(
  root: string,
  where: string,
  opts: { home?: string | null } = {},
): Promise<MachineProbe> {
  const rootfs = (await exists(path.join(root, 'etc'))) && (await exists(path.join(root, 'usr')));
  const home = opts.home === undefined ? os.homedir() : opts.home;
  const limits = !rootfs
    ? `Only absolute paths inside ${root} were checked: the target is not a root filesystem (no etc/ and usr/ in it), so "~/..." paths, commands, tool versions and the OS release were not checked.`
    : home === null
      ? NO_HOME
      : undefined;
  return {
    where,
    ...(limits ? { limits } : {}),
    async path(p) {
      if (p.startsWith('~') && (home === null || !rootfs)) return undefined;
      if (rootfs) {
        const rel = p.startsWith('~/') ? path.join(home ?? '', p.slice(2)) : p;
        const checked = path.join(root, rel);
        return { exists: await exists(checked), checked };
      }
      if (p.startsWith('/') && (p === root || p.startsWith(`${root}/`))) return { exists: await exists(p), checked: p };
      return undefined;
    },
    async command(name) {
      if (!rootfs) return undefined;
      for (const d of BIN_DIRS) {
        const p = path.join(root, d, name);
        if (await exists(p)) return { found: true, detail: p };
      }
      return { found: false, detail: `not in ${BIN_DIRS.map((d) => `/${d}`).join(', ')}` };
    },
    os: async () => (rootfs ? readOsRelease(path.join(root, 'etc', 'os-release')) : undefined),
  };
}

/**
 * The shell script that gathers the facts of `claims` on another machine in one run: one `@<n> …`
 * line per claim (path: 1/0; command: `command -v` output, then `@<n>v <version output>` for a version
 * claim), then `@o <line>` per line of /etc/os-release when asked. Versions run with `timeout`
 * where the machine has it, LC_ALL=C, stdin closed.
 */
export function probeScript(
  items: ReadonlyArray<{ kind: 'path'; path: string } | { kind: 'command'; name: string; versionArgs?: string[] }>,
  wantOs: boolean,
  timeoutS: number,
): string {
  const lines = [`if command -v timeout >/dev/null 2>&1; then T="timeout ${timeoutS}"; else T=; fi`];
  items.forEach((it, i) => {
    if (it.kind === 'path') {
      const p = shellQuote(it.path);
      lines.push(`if [ -e ${p} ] || [ -L ${p} ]; then echo "@${i} 1"; else echo "@${i} 0"; fi`);
      return;
    }
    lines.push(`f=$(command -v ${shellQuote(it.name)} 2>/dev/null | head -n 1); echo "@${i} $f"`);
    if (it.versionArgs) {
      const args = it.versionArgs.map(shellQuote).join(' ');
      const run = `LC_ALL=C $T "$f" ${args} 2>&1 </dev/null | head -c 2000 | tr '\\n' ' '`;
      lines.push(`if [ -n "$f" ]; then v=$(${run}); echo "@${i}v $v"; fi`);
    }
  });
  if (wantOs) lines.push("[ -r /etc/os-release ] && sed 's/^/@o /' /etc/os-release");
  lines.push('exit 0');
  return lines.join('\n');
}

/**
 * Probe of the machine a store's FileTransport reaches (a store on another machine, e.g. over SSH):
 * `prepare` runs probeScript there once for all claims; path/command/os answer from what it printed
 * (undefined for what it could not tell, so the claim is not judged). `home` is what "~" means: the
 * agent's home on that machine (null: unknown, ~ paths are not judged).
 */
export function transportProbe(
  io: FileTransport,
  opts: { home?: string | null; timeoutMs?: number } = {},
): MachineProbe {
  const home = opts.home ?? null;
  const perCommandS = Math.max(1, Math.round((opts.timeoutMs ?? 2000) / 1000));
  const paths = new Map<string, PathFact>();
  const commands = new Map<string, CommandFact>();
  let osFact: MachineFacts['os'] | undefined;
  const expand = (p: string): string | undefined => {
    if (!p.startsWith('~')) return p;
    return home === null ? undefined : path.posix.join(home, p.slice(2));
  };
  // why the checks could not run there at all (a login without a shell, a timeout), for `limits`
  let failed: string | undefined;
  return {
    where: io.where,
    get limits(): string | undefined {
      const notRun = failed
        ? `The stale-claim checks did not run on ${io.where}: ${failed}. No stale finding here does not mean the claims hold there.`
        : undefined;
      return [notRun, home === null ? NO_HOME : undefined].filter(Boolean).join(' ') || undefined;
    },
    async prepare(claims, deadlineMs) {
      type Item =
        | { kind: 'path'; path: string; key: string }
        | { kind: 'command'; name: string; versionArgs?: string[]; key: string };
      const items: Item[] = [];
      const seen = new Set<string>();
      let wantOs = false;
      for (const c of claims) {
        if (c.kind === 'os') {
          wantOs = true;
          continue;
        }
        if (c.kind === 'path') {
          const checked = expand(c.key);
          if (checked === undefined || seen.has(`p:${c.key}`)) continue;
          seen.add(`p:${c.key}`);
          items.push({ kind: 'path', path: checked, key: c.key });
          continue;
        }
        const bin = binaryOf(c.key);
        const withVersion = c.kind === 'version';
        const k = `c:${bin}:${withVersion}`;
        if (seen.has(k)) continue;
        seen.add(k);
        const argv = [...VERSION_COMMANDS.values()].find((a) => a[0] === bin) ?? [bin, '--version'];
        const versionArgs = withVersion ? { versionArgs: argv.slice(1) } : {};
        items.push({ kind: 'command', name: bin, key: `${bin}:${withVersion}`, ...versionArgs });
      }
      if (!items.length && !wantOs) return;
      const script = probeScript(items, wantOs, perCommandS);
      let r: Awaited<ReturnType<FileTransport['exec']>>;
      try {
        r = await io.exec(['sh', '-c', script], { timeoutMs: Math.max(1000, deadlineMs) });
      } catch (e) {
        failed = `commands cannot be run there (${(e as Error).message.replace(/\s+/g, ' ').trim()})`;
        return;
      }
      if (r.code === null) {
        failed = `the check timed out after ${Math.round(Math.max(1000, deadlineMs) / 1000)} s`; // nothing is judged
        return;
      }
      const out = new Map<string, string>();
      const osLines: string[] = [];
      for (const line of r.stdout.toString('utf8').split('\n')) {
        const m = /^@(\d+v?|o) ?(.*)$/.exec(line);
        if (!m) continue;
        if (m[1] === 'o') osLines.push(m[2]);
        else out.set(m[1], m[2]);
      }
      items.forEach((it, i) => {
        const v = out.get(String(i));
        if (v === undefined) return;
        if (it.kind === 'path') {
          paths.set(it.key, { exists: v === '1', checked: it.path });
          return;
        }
        const found = v.trim();
        if (!found) {
          commands.set(it.key, { found: false, detail: `not on PATH on ${io.where}` });
          return;
        }
        const version = it.versionArgs ? parseVersion(out.get(`${i}v`) ?? '') : undefined;
        const run = it.versionArgs ? `${found} ${it.versionArgs.join(' ')}` : found;
        const detail = `${run} on ${io.where}`;
        commands.set(it.key, { found: true, ...(version ? { version } : {}), detail });
      });
      if (!out.size && !osLines.length) {
        // not one answer: the script did not run (e.g. a login whose shell is nologin)
        const why = r.stderr.toString('utf8').trim().split('\n')[0]?.trim();
        failed = `the check script gave no answer (exit ${r.code}${why ? `: ${why}` : ''})`;
        return;
      }
      const text = osLines.join('\n');
      const get = (k: string): string | undefined => new RegExp(`^${k}=("?)([^"\\n]*)\\1$`, 'm').exec(text)?.[2];
      const id = get('ID');
      if (id) osFact = { id: id.toLowerCase(), versionId: get('VERSION_ID'), detail: `/etc/os-release on ${io.where}` };
    },
    async path(p) {
      return paths.get(p);
    },
    async command(name, withVersion) {
      return commands.get(`${name}:${withVersion}`);
    },
    os: async () => osFact,
  };
}

/**
 * Probe every claim (deduplicated), at most `concurrency` at a time, stopping at `deadlineMs`
 * (claims not probed by then are left out, so they are not judged).
 */
export async function gatherFacts(
  claims: Claim[],
  probe: MachineProbe,
  opts: { deadlineMs?: number; concurrency?: number } = {},
): Promise<MachineFacts> {
  const facts: MachineFacts = { where: probe.where, paths: {}, commands: {} };
  const deadline = Date.now() + (opts.deadlineMs ?? 5000);
  await probe.prepare?.(claims, deadline - Date.now());
  const jobs: Array<() => Promise<void>> = [];
  const seen = new Set<string>();
  let wantOs = false;
  for (const c of claims) {
    if (c.kind === 'os') {
      wantOs = true;
      continue;
    }
    const key = c.kind === 'path' ? `p:${c.key}` : `c:${binaryOf(c.key)}:${c.kind === 'version'}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (c.kind === 'path') {
      jobs.push(async () => {
        const f = await probe.path(c.key);
        if (f) facts.paths![c.key] = f;
      });
    } else {
      const bin = binaryOf(c.key);
      const withVersion = c.kind === 'version';
      jobs.push(async () => {
        const f = await probe.command(bin, withVersion);
        const prev = facts.commands![bin];
        if (f && (!prev || (f.version && !prev.version))) facts.commands![bin] = f;
      });
    }
  }
  if (wantOs) {
    jobs.push(async () => {
      const o = await probe.os();
      if (o) facts.os = o;
    });
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length && Date.now() < deadline) {
      const job = jobs[next++];
      await job();
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 4, jobs.length) }, worker));
  return facts;
}
