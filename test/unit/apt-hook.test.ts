/**
 * The apt hook (issue 15 item 6) with the real apt-get and dpkg of the build machine (root, as in
 * CI): `hook install apt` into a throwaway APT configuration directory (APT_CONFIG points apt at it,
 * so the machine's /etc/apt is never touched), a tiny package built with dpkg-deb, installed and
 * removed with `apt-get`; the pair and its reason; one pair per apt command across several dpkg
 * runs; and that a broken AgentKeep (state dir unusable, the program gone, the target busy) never
 * makes apt fail.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAptPackageList, aptSummary } from '../../sidecar/hooks/aptRun';
import { targetKey } from '../../sidecar/core/target';
import type { RestorePoint } from '../../sidecar/protocol';
import { buildSidecar, cliRunner, SIDECAR } from './helpers/sidecar';

const PKG = 'agentkeep-apt-test';

/** Run a program to completion. */
function exec(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('error', reject);
    c.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
    c.stdin.end(input ?? '');
  });
}

/** The lines AgentKeep said on apt's stderr. */
const akLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l.startsWith('agentkeep:'));

describe('apt hook (real apt-get and dpkg, as root)', function () {
  this.timeout(180000);
  let tmp: string;
  let state: string;
  let target: string;
  let confDir: string;
  let aptConfig: string;
  let deb: string;
  const { ak, json } = cliRunner(() => state);
  const apt = (...args: string[]): ReturnType<typeof exec> =>
    exec('apt-get', ['-y', ...args], { APT_CONFIG: aptConfig, DEBIAN_FRONTEND: 'noninteractive' });
  const points = (): Promise<RestorePoint[]> => json('restore-point', 'list', '--target', `dir:${target}`);
  const installed = (): boolean =>
    spawnSync('dpkg-query', ['-W', '-f=${Status}', PKG], { encoding: 'utf8' }).stdout.includes('install ok installed');

  before(async function () {
    if (
      process.getuid?.() !== 0 ||
      spawnSync('apt-get', ['--version']).status !== 0 ||
      spawnSync('dpkg-deb', ['--version']).status !== 0
    ) {
      throw new Error(
        'The apt hook tests run apt-get and dpkg: run them as root with apt and dpkg-deb, as CI does ' +
          '(sudo npx mocha test/unit/apt-hook.test.ts).',
      );
    }
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-apt-'));
    state = path.join(tmp, 'state');
    target = path.join(tmp, 'machine');
    confDir = path.join(tmp, 'etc', 'apt.conf.d');
    await fs.mkdir(confDir, { recursive: true });
    await fs.mkdir(target);
    await fs.writeFile(path.join(target, 'etc-file'), 'v1');
    // apt reads only this test's configuration parts (and no main apt.conf)
    aptConfig = path.join(tmp, 'apt.conf');
    await fs.writeFile(aptConfig, `Dir::Etc::parts "${confDir}";\nDir::Etc::main "/dev/null";\n`);
    // a tiny package
    const root = path.join(tmp, 'pkg');
    await fs.mkdir(path.join(root, 'DEBIAN'), { recursive: true });
    await fs.mkdir(path.join(root, 'usr', 'share', PKG), { recursive: true });
    await fs.writeFile(
      path.join(root, 'DEBIAN', 'control'),
      `Package: ${PKG}\nVersion: 1.0-1\nArchitecture: all\nMaintainer: AgentKeep tests <t@example.invalid>\n` +
        'Description: AgentKeep apt hook test package\n',
    );
    await fs.writeFile(path.join(root, 'usr', 'share', PKG, 'hello.txt'), 'hello\n');
    deb = path.join(tmp, `${PKG}_1.0-1_all.deb`);
    const b = await exec('dpkg-deb', ['--build', '--root-owner-group', root, deb]);
    assert.equal(b.code, 0, b.stderr);
    spawnSync('dpkg', ['--purge', PKG]);
    await json('agent', 'add', 'sys', '--target', `dir:${target}`);
  });

  afterEach(async () => {
    spawnSync('dpkg', ['--purge', PKG]);
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('install / status / remove: three DPkg hooks, version 3 for its entry only; idempotent; foreign kept', async () => {
    const r = await json('hook', 'install', 'apt', '--apt-conf-dir', confDir);
    assert.equal(r.changed, true);
    const conf = await fs.readFile(path.join(confDir, '80agentkeep'), 'utf8');
    const script = path.join(tmp, 'etc', 'agentkeep-apt-hook');
    assert.match(conf, new RegExp(`DPkg::Pre-Invoke \\{ "${script} pre-invoke \\|\\| true"; \\};`));
    assert.match(conf, new RegExp(`DPkg::Pre-Install-Pkgs \\{ "${script} pre-install \\|\\| cat >/dev/null"; \\};`));
    assert.match(conf, new RegExp(`DPkg::Tools::Options::${script}::Version "3";`));
    assert.match(conf, new RegExp(`DPkg::Post-Invoke \\{ "${script} post-invoke \\|\\| true"; \\};`));
    assert.equal((await fs.stat(script)).mode & 0o777, 0o755);
    // apt itself reads it
    const dump = await exec('apt-config', ['dump'], { APT_CONFIG: aptConfig });
    assert.match(dump.stdout, new RegExp(`DPkg::Tools::Options::${script}::Version "3";`));
    assert.equal(
      (await json('hook', 'install', 'apt', '--apt-conf-dir', confDir)).changed,
      false,
      'a second install changes nothing',
    );
    const st = await json('hook', 'status', 'apt', '--apt-conf-dir', confDir);
    assert.equal(st.apt.installed, true);
    assert.equal(st.apt.settings.agent, 'sys');
    assert.deepEqual(st.apt.problems, []);
    assert.equal((await json('hook', 'remove', 'apt', '--apt-conf-dir', confDir)).changed, true);
    assert.deepEqual(await fs.readdir(confDir), []);
    assert.match((await ak('hook', 'status', '--apt-conf-dir', confDir)).stdout, /apt: no AgentKeep hook/);
    // a file AgentKeep did not write is never replaced
    await fs.writeFile(path.join(confDir, '80agentkeep'), 'APT::Foo "1";\n');
    const refused = await ak('hook', 'install', 'apt', '--apt-conf-dir', confDir);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /exists and was not written by AgentKeep; nothing was changed/);
    assert.equal(await fs.readFile(path.join(confDir, '80agentkeep'), 'utf8'), 'APT::Foo "1";\n');
  });

  it('apt-get install ./x.deb and apt-get remove each leave a pre/post pair, packages as reason', async () => {
    await json('hook', 'install', 'apt', '--apt-conf-dir', confDir);
    const inst = await apt('install', deb);
    assert.equal(inst.code, 0, inst.stderr + inst.stdout);
    assert.ok(installed(), 'the package is installed');
    let rps = await points();
    assert.equal(rps.length, 2, JSON.stringify(rps));
    const [post, pre] = rps;
    assert.equal(pre.kind, 'pre');
    assert.equal(post.kind, 'post');
    assert.equal(post.pairOf, pre.id);
    assert.equal(pre.reason?.text, `apt: install ${PKG} 1.0-1`);
    assert.equal(pre.reason?.origin, 'apt');
    assert.equal(pre.reason?.agent, 'sys');
    assert.match(pre.reason?.command ?? '', new RegExp(`apt-get -y install ${deb.replace(/[.]/g, '\\.')}`));
    assert.match(
      inst.stdout + inst.stderr,
      new RegExp(`agentkeep: restore point ${pre.id} before apt: install ${PKG} 1\\.0-1`),
    );
    const rm = await apt('remove', PKG);
    assert.equal(rm.code, 0, rm.stderr);
    rps = await points();
    assert.equal(rps.length, 4);
    assert.equal(rps[1].reason?.text, `apt: remove ${PKG}`);
    assert.equal(rps[0].pairOf, rps[1].id);
    const list = await ak('restore-point', 'list', '--target', `dir:${target}`);
    assert.match(list.stdout, new RegExp(`${rps[1].id} .* pre, post ${rps[0].id} .* apt: remove ${PKG}`));
  });

  it('one pair per apt command across several dpkg runs (keyed on the apt process)', async () => {
    await json('hook', 'install', 'apt', '--apt-conf-dir', confDir);
    const script = path.join(tmp, 'etc', 'agentkeep-apt-hook');
    const head = 'VERSION 3\nCommandLine::AsString=apt-get%20install%20a%20b\n\n';
    const list = `${head}a - - none < 1.0 all none /var/cache/apt/archives/a_1.0_all.deb\n`;
    const list2 = `${head}b 1.0 all none < 2.0 all none /var/cache/apt/archives/b_2.0_all.deb\n`;
    // a stand-in for apt: one process that runs the hooks of two dpkg runs, as apt does
    const fake = path.join(tmp, 'fake-apt');
    await fs.writeFile(
      fake,
      `#!/bin/sh\nfor l in "$1" "$2"; do\n  ${script} pre-invoke\n  printf '%s' "$l" | ${script} pre-install\n` +
        `  echo v2 >> ${target}/etc-file\n  ${script} post-invoke\ndone\n`,
      { mode: 0o755 },
    );
    const r = await exec(fake, [list, list2]);
    assert.equal(r.code, 0, r.stderr);
    const rps = await points();
    assert.deepEqual(
      rps.map((p) => p.kind),
      ['post', 'pre'],
      r.stderr,
    );
    assert.equal(rps[0].pairOf, rps[1].id);
    assert.equal(rps[1].reason?.text, 'apt: install a 1.0');
    assert.equal(rps[1].reason?.command, 'apt-get install a b');
    assert.equal(
      akLines(r.stderr).filter((l) => / after apt /.test(l)).length,
      2,
      'a post after each dpkg run, the later one replacing the earlier',
    );
    // a second apt command is a second pair
    await exec(fake, [list, list2]);
    assert.equal((await points()).length, 4);
  });

  it('a broken AgentKeep never makes apt fail: bad state dir, no program, busy target', async () => {
    // the state dir is a file now
    await json('hook', 'install', 'apt', '--apt-conf-dir', confDir, '--timeout', '2');
    const realState = state;
    await fs.rename(realState, `${realState}.moved`);
    await fs.writeFile(realState, 'not a directory');
    let r = await apt('install', deb);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(installed());
    let lines = akLines(r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      /apt hook \(pre-install\): no restore point: the state dir .* is not usable .*; apt continues without it\./,
    );
    await fs.rm(realState);
    await fs.rename(`${realState}.moved`, realState);
    spawnSync('dpkg', ['--purge', PKG]);

    // the target is busy (another create holds its lock): the hook gives up within its time box
    const lock = path.join(state, 'locks', `${targetKey(`dir:${await fs.realpath(target)}`)}.lock`);
    await fs.mkdir(path.dirname(lock), { recursive: true });
    await fs.writeFile(
      lock,
      JSON.stringify({
        pid: process.pid,
        host: os.hostname(),
        time: new Date().toISOString(),
        op: 'create restore point',
        token: 'test',
      }),
    );
    r = await apt('install', deb);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(installed());
    lines = akLines(r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /apt hook \(pre-install\): no restore point: .*(busy|longer than)/i);
    assert.equal((await points()).length, 0);
    await fs.rm(lock);
    spawnSync('dpkg', ['--purge', PKG]);

    // the program is gone: installed from a copy that is then deleted
    const copy = path.join(tmp, 'bin');
    await fs.mkdir(copy);
    copyFileSync(SIDECAR, path.join(copy, 'sidecar.js'));
    // the launcher loads the full CLI from the same directory
    copyFileSync(path.join(path.dirname(SIDECAR), 'cli.js'), path.join(copy, 'cli.js'));
    const inst = await exec(process.execPath, [
      path.join(copy, 'sidecar.js'),
      '--state-dir',
      state,
      'hook',
      'install',
      'apt',
      '--apt-conf-dir',
      confDir,
    ]);
    assert.equal(inst.code, 0, inst.stderr);
    await fs.rm(copy, { recursive: true });
    assert.match(
      (await ak('hook', 'status', 'apt', '--apt-conf-dir', confDir)).stdout,
      /Problem: .*sidecar\.js is missing/,
    );
    r = await apt('install', deb);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(installed());
    lines = akLines(r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /sidecar\.js or .*node is missing; apt continues without a restore point/);
    spawnSync('dpkg', ['--purge', PKG]);

    // even the hook entry gone: apt says "not found" and goes on
    await fs.rm(path.join(tmp, 'etc', 'agentkeep-apt-hook'));
    r = await apt('install', deb);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(installed());
  });

  it('the hook of a dir: target takes its restore point without loading the SQLite WASM module', async () => {
    const mark = path.join(tmp, 'wasm-used');
    const probe = path.join(tmp, 'probe.js');
    await fs.writeFile(
      probe,
      `const fs = require('fs');\nconst note = (k) => fs.writeFileSync(${JSON.stringify(mark)}, k);\n` +
        "for (const k of ['instantiate', 'compile', 'instantiateStreaming', 'compileStreaming']) {\n" +
        '  const o = WebAssembly[k];\n  WebAssembly[k] = (...a) => (note(k), o(...a));\n}\n' +
        'WebAssembly.Module = new Proxy(WebAssembly.Module, {\n' +
        "  construct(t, a) { note('Module'); return new t(...a); },\n});\n",
    );
    const list = `VERSION 3\nCommandLine::AsString=apt-get%20install%20x\n\nx - - none < 1.0 all none /x.deb\n`;
    const r = await exec(
      process.execPath,
      [
        '--require',
        probe,
        SIDECAR,
        '--state-dir',
        state,
        'hook',
        'run',
        'apt',
        '--dpkg',
        'pre-install',
        '--agent',
        'sys',
      ],
      {},
      list,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /restore point \S+ before apt: install x 1\.0/);
    assert.equal((await points()).length, 1);
    await assert.rejects(fs.stat(mark), 'no WebAssembly module was compiled');
  });

  it("reads APT's version 3 package list", () => {
    const l = parseAptPackageList(
      'VERSION 3\nAPT::Architecture=amd64\nCommandLine::AsString=apt%20full-upgrade\n\n' +
        'curl 7.88.1-10 amd64 same < 8.5.0-2 amd64 same /var/cache/apt/archives/curl.deb\n' +
        'curl 7.88.1-10 amd64 same < 8.5.0-2 amd64 same **CONFIGURE**\n' +
        'hello - - none < 2.10-3 amd64 none /var/cache/apt/archives/hello.deb\n' +
        'old 1.0 all none > - - none **REMOVE**\n' +
        'pinned 2.0 all none > 1.0 all none /x/pinned.deb\n',
    );
    assert.equal(l.command, 'apt full-upgrade');
    assert.deepEqual(
      l.changes.map((c) => c.action),
      ['upgrade', 'install', 'remove', 'downgrade'],
    );
    assert.equal(
      aptSummary(l.changes),
      'apt: install hello 2.10-3; upgrade curl 7.88.1-10 -> 8.5.0-2; downgrade pinned 2.0 -> 1.0; remove old',
    );
    const many = Array.from({ length: 50 }, (_, i) => ({
      action: 'install' as const,
      name: `pkg${i}`,
      from: '',
      to: '1.0',
    }));
    assert.match(aptSummary(many), /… \(50 packages\)$/);
    assert.ok(aptSummary(many).length <= 200);
    assert.deepEqual(parseAptPackageList('/var/cache/apt/archives/x.deb\n').changes, [], 'version 1 lists no actions');
  });
});
