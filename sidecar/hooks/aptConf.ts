/**
 * `agentkeep hook install|remove|status apt` (issue 15 item 6): the APT configuration that takes one
 * pre/post pair of restore points around each apt command.
 *
 * Two files, both marked as AgentKeep's:
 *   <aptConfDir>/80agentkeep            (default /etc/apt/apt.conf.d/80agentkeep)
 *       DPkg::Pre-Invoke       { "<hook> pre-invoke || true"; };        opens the record of this apt command
 *       DPkg::Pre-Install-Pkgs { "<hook> pre-install || cat >/dev/null"; };  the pre restore point, with the
 *                                                                         package list (version 3) on stdin
 *       DPkg::Tools::Options::<hook>::Version "3";
 *       DPkg::Post-Invoke      { "<hook> post-invoke || true"; };       the post restore point
 *   <aptConfDir>/../agentkeep-apt-hook  (default /etc/apt/agentkeep-apt-hook), the hook entry: a small sh
 *       script that runs `node sidecar.js --state-dir S hook run apt --dpkg STEP [--agent N]` under
 *       `timeout`, says one line on stderr when AgentKeep is missing, fails or runs out of time, drains
 *       its stdin, and always exits 0.
 * The script has a name of its own because APT keys `DPkg::Tools::Options::<cmd>` on the first word
 * of the command (a shared first word such as /bin/sh would give other packages' hooks version 3).
 * `|| true` / `|| cat >/dev/null` keep apt going even when the script itself is gone (and the
 * package list is still read, so apt never writes into a closed pipe).
 */
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { writeFileAtomic } from '../core/fsutil';

/** Name of the APT configuration file. */
export const APT_CONF_NAME = '80agentkeep';
/** Where APT reads its configuration parts by default. */
export const DEFAULT_APT_CONF_DIR = '/etc/apt/apt.conf.d';
/** Name of the hook entry script (next to the conf dir: /etc/apt/agentkeep-apt-hook). */
export const APT_HOOK_SCRIPT = 'agentkeep-apt-hook';
/** Default time box of one hook step, in ms: the restore point must fit in it, else apt goes on without. */
export const DEFAULT_APT_BUDGET_MS = 4000;
/** The line that marks both files as AgentKeep's, followed by the settings as JSON. */
const MARKER = 'agentkeep-apt-hook:';

/** The settings an installed hook runs with (kept in both files after the marker). */
export interface AptHookSettings {
  /** The node binary. */
  node: string;
  /** out/sidecar.js, the full CLI. */
  sidecar: string;
  /** The state dir the restore points go to. */
  stateDir: string;
  /** The named agent whose target and stores are used; absent: `target` and `stores`. */
  agent?: string;
  target?: string;
  stores?: string[];
  /** Time box of one step, in ms. */
  budgetMs: number;
}

/** Paths of the two files for a conf dir. */
export function aptPaths(confDir = DEFAULT_APT_CONF_DIR): { conf: string; script: string } {
  const dir = path.resolve(confDir);
  return { conf: path.join(dir, APT_CONF_NAME), script: path.join(path.dirname(dir), APT_HOOK_SCRIPT) };
}

/** Quote for sh (single quotes). */
function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The hook entry script. */
export function aptHookScript(s: AptHookSettings, conf: string): string {
  const args = [
    '--state-dir',
    s.stateDir,
    'hook',
    'run',
    'apt',
    ...(s.agent ? ['--agent', s.agent] : []),
    ...(s.target ? ['--target', s.target] : []),
    ...(s.stores ?? []).flatMap((x) => ['--store', x]),
    '--budget-ms',
    String(s.budgetMs),
  ];
  const hard = Math.ceil(s.budgetMs / 1000) + 3;
  return `#!/bin/sh
# ${MARKER} ${JSON.stringify(s)}
# AgentKeep's APT hook entry (agentkeep hook install apt): a restore point pair around each apt
# command. It never makes apt fail: it always exits 0 and says at most one line on stderr.
# Remove it with: agentkeep hook remove apt
step="$1"
node=${sq(s.node)}
sidecar=${sq(s.sidecar)}
conf=${sq(conf)}
drain() { [ "$step" = pre-install ] && cat >/dev/null; return 0; }
if [ ! -x "$node" ] || [ ! -f "$sidecar" ]; then
  drain
  # said once per apt command: at the step that would take the restore point
  [ "$step" = pre-install ] && echo "agentkeep: $sidecar or $node is missing; apt continues without a restore point" \
    "(agentkeep hook remove apt, or delete $conf)" >&2
  exit 0
fi
timeout -k 2 ${hard} "$node" "$sidecar" ${args.map(sq).join(' ')} --dpkg "$step"
rc=$?
drain
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "agentkeep: the apt hook ($step) ran out of time (${hard} s); apt continues without it" >&2
elif [ "$rc" -ne 0 ]; then
  echo "agentkeep: the apt hook ($step) failed (exit $rc); apt continues without it" >&2
fi
exit 0
`;
}

/** The APT configuration file. */
export function aptConfText(s: AptHookSettings, script: string): string {
  return `// ${MARKER} ${JSON.stringify(s)}
// AgentKeep: one pre/post pair of restore points around each apt command (agentkeep hook install apt).
// It never makes apt fail or wait long. Remove it with: agentkeep hook remove apt (or delete this file).
DPkg::Pre-Invoke { "${script} pre-invoke || true"; };
DPkg::Pre-Install-Pkgs { "${script} pre-install || cat >/dev/null"; };
DPkg::Tools::Options::${script}::Version "3";
DPkg::Post-Invoke { "${script} post-invoke || true"; };
`;
}

/** What install or remove did. */
export interface AptHookChange {
  changed: boolean;
  message: string;
  conf: string;
  script: string;
  notes: string[];
}

/** What `hook status apt` reports. */
export interface AptHookStatus {
  installed: boolean;
  conf: string;
  script: string;
  settings?: AptHookSettings;
  /** Problems that make the installed hook skip its restore points (it still never fails apt). */
  problems: string[];
}

/** The settings after the marker of a file, or undefined when the file is not AgentKeep's. */
async function markedSettings(file: string): Promise<AptHookSettings | undefined | 'foreign'> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AgentKeepError('FileError', `Cannot read ${file}: ${(e as Error).message}.`, 'Run it as root (sudo).');
  }
  const line = text.split('\n').find((l) => l.includes(MARKER));
  if (!line) return 'foreign';
  try {
    return JSON.parse(line.slice(line.indexOf(MARKER) + MARKER.length)) as AptHookSettings;
  } catch {
    return 'foreign';
  }
}

/**
 * Write the APT configuration and the hook entry script (idempotent: the same settings change
 * nothing; other settings replace AgentKeep's earlier files). Files not written by AgentKeep are
 * never replaced.
 * @throws FileError (not root, a foreign file in the way, conf dir missing)
 */
export async function installApt(s: AptHookSettings, confDir = DEFAULT_APT_CONF_DIR): Promise<AptHookChange> {
  const { conf, script } = aptPaths(confDir);
  if (!existsSync(path.dirname(conf))) {
    throw new AgentKeepError(
      'FileError',
      `${path.dirname(conf)} does not exist: is APT installed?`,
      'Give the APT configuration directory with --apt-conf-dir DIR.',
    );
  }
  if (!/^[A-Za-z0-9_./+-]+$/.test(script)) {
    // the path is the first word of a command in apt.conf: no quotes, no spaces
    throw new AgentKeepError(
      'FileError',
      `The hook entry would be ${script}: APT commands cannot hold spaces or quotes there.`,
      'Pick an --apt-conf-dir whose parent has a plain path.',
    );
  }
  for (const f of [conf, script]) {
    if ((await markedSettings(f)) === 'foreign') {
      throw new AgentKeepError(
        'FileError',
        `${f} exists and was not written by AgentKeep; nothing was changed.`,
        'Move it away, or pick another --apt-conf-dir.',
      );
    }
  }
  const confText = aptConfText(s, script);
  const scriptText = aptHookScript(s, conf);
  const same =
    (await fs.readFile(conf, 'utf8').catch(() => '')) === confText &&
    (await fs.readFile(script, 'utf8').catch(() => '')) === scriptText;
  const notes = [
    'Every apt command now takes a pre restore point before dpkg runs (the package list as its reason) ' +
      'and a post one after it; ' +
      `each step is time-boxed to ${s.budgetMs / 1000} s and never makes apt fail (one line on stderr instead).`,
    `Restore points go to ${s.agent ? `agent ${s.agent}` : s.target} (state dir ${s.stateDir}).`,
  ];
  if (same)
    return {
      changed: false,
      message: `The apt hook is installed already (${conf}); nothing changed.`,
      conf,
      script,
      notes,
    };
  try {
    await writeFileAtomic(script, scriptText, { mode: 0o755 });
    await fs.chmod(script, 0o755);
    await writeFileAtomic(conf, confText, { mode: 0o644 });
  } catch (e) {
    const why =
      (e as NodeJS.ErrnoException).code === 'EACCES'
        ? "permission denied (APT's configuration belongs to root)"
        : (e as Error).message;
    throw new AgentKeepError(
      'FileError',
      `Cannot write ${conf}: ${why}.`,
      'Run it as root: sudo agentkeep hook install apt …',
    );
  }
  return { changed: true, message: `Installed the apt hook: ${conf} and ${script}.`, conf, script, notes };
}

/** Remove AgentKeep's APT files (only files with the marker). @throws FileError (not root) */
export async function removeApt(confDir = DEFAULT_APT_CONF_DIR): Promise<AptHookChange> {
  const { conf, script } = aptPaths(confDir);
  const removed: string[] = [];
  const notes: string[] = [];
  for (const f of [conf, script]) {
    const m = await markedSettings(f);
    if (m === undefined) continue;
    if (m === 'foreign') {
      notes.push(`${f} was not written by AgentKeep and was left alone.`);
      continue;
    }
    try {
      await fs.rm(f);
    } catch (e) {
      throw new AgentKeepError(
        'FileError',
        `Cannot remove ${f}: ${(e as Error).message}.`,
        'Run it as root: sudo agentkeep hook remove apt.',
      );
    }
    removed.push(f);
  }
  const message = removed.length
    ? `Removed the apt hook: ${removed.join(' and ')}. Its restore points stay.`
    : `No AgentKeep apt hook in ${path.dirname(conf)}; nothing changed.`;
  return { changed: removed.length > 0, message, conf, script, notes };
}

/** Whether the apt hook is installed, with its settings and what would make it skip restore points. */
export async function statusApt(confDir = DEFAULT_APT_CONF_DIR): Promise<AptHookStatus> {
  const { conf, script } = aptPaths(confDir);
  const c = await markedSettings(conf);
  const sc = await markedSettings(script);
  const problems: string[] = [];
  if (c === 'foreign') problems.push(`${conf} is not AgentKeep's`);
  const settings = typeof c === 'object' ? c : undefined;
  if (settings) {
    if (sc === undefined)
      problems.push(`the hook entry ${script} is missing (apt says "not found" and goes on without restore points)`);
    if (!existsSync(settings.node)) problems.push(`${settings.node} is missing`);
    if (!existsSync(settings.sidecar)) problems.push(`${settings.sidecar} is missing`);
  }
  return { installed: !!settings, conf, script, ...(settings ? { settings } : {}), problems };
}
