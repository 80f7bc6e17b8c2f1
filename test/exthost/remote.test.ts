/**
 * The editor on a remote sidecar (issue 11 item 4) in the real extension host: a real
 * `agentkeep serve --ws --tls-cert --tls-key` started here in another process with its own state dir
 * (a self-signed certificate made by openssl, pinned by agentkeep.sidecar.fingerprint; the token set
 * through "Set Remote Sidecar Token"), serving first the demo agent (dir: target, Hermes memory),
 * then a Proxmox guest of the contract simulator (its guest agent a real qemu-ga, a running process
 * naming a Hermes home in HERMES_HOME: the remote sidecar finds the guest's memory by probing it).
 * Restore points that exist only in the remote
 * sidecar's journal show in the Agent view; CodeLens, the memory inspector, create and restore go
 * through it; a wrong pin is refused with the fingerprint seen; a killed sidecar shows as
 * "reconnecting…" and the editor reconnects when it is back on the same port.
 * Runs last; puts the settings back after.
 */
import * as assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentKeepApi } from '../../extension/extension';
import type { RestorePoint, ResultOf } from '../../sidecar/protocol';
import { makeCert, PveSim } from '../pve-sim/server';
import { startQga, type TestQga } from '../unit/helpers/qga';
import { labels, treePath, until } from './agent.test';

const log = (...a: unknown[]) => console.log('    [agentkeep-remote]', ...a);
const TOKEN = `remote-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}-token`;
const PVE_TOKEN_ID = 'agent@pve!agentkeep';
const PVE_SECRET = `pve-${Math.random().toString(36).slice(2)}`;

export function registerRemoteSuite(): void {
  describe('AgentKeep on a remote sidecar (serve --ws with TLS, in another process)', function () {
    this.timeout(90000);
    let api: AgentKeepApi;
    let tmp: string;
    let sidecarJs: string;
    let stateDir: string;
    let cert: ReturnType<typeof makeCert>;
    let child: ChildProcess | undefined;
    let url: string;
    let port = 0;
    let sim: PveSim;
    let qga: TestQga | undefined;
    let hermes: ChildProcess | undefined;
    let guestHome: string;
    let workspace: string;
    const conf = () => vscode.workspace.getConfiguration('agentkeep');
    const W = vscode.ConfigurationTarget.Workspace;
    let saved: Record<string, unknown>;
    const KEYS = ['target', 'stores', 'sidecar.url', 'sidecar.fingerprint'];

    /** The remote sidecar's environment: what it would have on the management VM (the PVE token). */
    const remoteEnv = () => ({
      ...process.env,
      AGENTKEEP_PVE_TOKEN: `${PVE_TOKEN_ID}=${PVE_SECRET}`,
      AGENTKEEP_PVE_FINGERPRINT: sim.cert.fingerprint,
    });

    async function startRemote(): Promise<void> {
      const args = [sidecarJs, 'serve', '--ws', `127.0.0.1:${port}`, '--token-file', path.join(tmp, 'token')];
      args.push('--tls-cert', path.join(tmp, 'cert.pem'), '--tls-key', path.join(tmp, 'key.pem'));
      args.push('--state-dir', stateDir);
      const c = spawn(process.execPath, args, { env: remoteEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
      child = c;
      let err = '';
      const m = await new Promise<RegExpMatchArray>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`the remote sidecar did not start: ${err}`)), 20000);
        c.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          const hit = /listening on (wss:\/\/127\.0\.0\.1:(\d+))/.exec(err);
          if (hit) {
            clearTimeout(t);
            resolve(hit);
          }
        });
        c.once('exit', (code) => reject(new Error(`the remote sidecar exited (${code}): ${err}`)));
      });
      assert.ok(err.includes(`TLS certificate SHA-256 fingerprint ${cert.fingerprint}`), err);
      url = m[1]!;
      port = Number(m[2]);
      log(`remote sidecar pid ${c.pid} at ${url}, state dir ${stateDir}`);
    }

    async function killRemote(): Promise<void> {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    }

    /** The CLI on the sidecar's machine, against its state dir. */
    function cli(...args: string[]): Promise<string> {
      return new Promise((resolve, reject) =>
        execFile(
          process.execPath,
          [sidecarJs, ...args, '--state-dir', stateDir],
          { env: remoteEnv() },
          (e, out, errOut) => (e ? reject(new Error(`${args.join(' ')}: ${errOut || e.message}`)) : resolve(out)),
        ),
      );
    }

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep')!;
      api = await ext.activate();
      sidecarJs = path.join(ext.extensionPath, 'out', 'sidecar.js');
      workspace = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      saved = Object.fromEntries(KEYS.map((k) => [k, conf().inspect(k)?.workspaceValue]));
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-remote-exthost-'));
      stateDir = path.join(tmp, 'remote-state');
      fs.writeFileSync(path.join(tmp, 'token'), `${TOKEN}\n`, { mode: 0o600 });
      cert = makeCert('agentkeep-remote');
      fs.writeFileSync(path.join(tmp, 'cert.pem'), cert.cert);
      fs.writeFileSync(path.join(tmp, 'key.pem'), cert.key, { mode: 0o600 });
      const schema = path.join(__dirname, 'pve-api-schema.json');
      if (!fs.existsSync(schema))
        fs.copyFileSync(path.join(ext.extensionPath, 'test', 'pve-sim', 'pve-api-schema.json'), schema);
      sim = new PveSim({ token: { id: PVE_TOKEN_ID, secret: PVE_SECRET }, nodes: ['pve1'] });
      // VM 101's guest agent: a real qemu-ga; "Hermes runs in the guest": a process naming its home
      guestHome = path.join(tmp, 'guest-root', '.hermes');
      fs.cpSync(path.join(ext.extensionPath, 'test', 'fixtures', 'memory', 'hermes'), guestHome, { recursive: true });
      qga = await startQga(path.join(tmp, 'qga'));
      hermes = spawn('sleep', ['3600'], { env: { ...process.env, HERMES_HOME: guestHome }, stdio: 'ignore' });
      sim.addGuest({ vmid: 101, name: 'hermes-agent', tags: ['agent'], running: true, qga: qga.socket });
      await sim.start();
      await startRemote();
      // a restore point that exists only in the remote sidecar's journal
      const target = String(conf().get('target'));
      const stores = conf().get<string[]>('stores') ?? [];
      await cli(
        'restore-point',
        'create',
        '--target',
        target,
        ...stores.flatMap((s) => ['--store', s]),
        '--label',
        'taken on the sidecar machine',
      );
      await vscode.commands.executeCommand('agentkeep.clearSidecarToken');
      await conf().update('sidecar.url', url, W);
      await conf().update('sidecar.fingerprint', cert.fingerprint, W);
    });

    after(async function () {
      for (const k of KEYS) await conf().update(k, saved[k], W);
      await vscode.commands.executeCommand('agentkeep.clearSidecarToken').then(undefined, () => undefined);
      await killRemote();
      hermes?.kill();
      await qga?.stop();
      await sim?.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    });

    it('without a token: "not connected" in the status bar, naming "Set Remote Sidecar Token"', async function () {
      await api.refresh();
      const c = await until('the link to fail', () => {
        const s = api.sidecarConnection();
        return s.kind === 'failed' ? s : undefined;
      });
      assert.equal(c.kind === 'failed' && c.error.code, 'no_sidecar_token');
      assert.equal(api.getStatusBarText(), '$(debug-disconnect) AgentKeep: not connected');
    });

    it('with the token from SecretStorage: the Agent view lists the remote journal, memory and CodeLens come from it', async function () {
      assert.equal(await vscode.commands.executeCommand('agentkeep.setSidecarToken', TOKEN), true);
      await until('connected', () => api.sidecarConnection().kind === 'connected');
      const rows = await until('the remote restore point in the tree', async () => {
        await api.refresh();
        const l = labels(api, await treePath(api, 'agent-home', 'Restore points'));
        return l.includes('taken on the sidecar machine') ? l : undefined;
      });
      log('restore points over the remote sidecar:', rows.join(' | '));
      assert.match(api.getStatusBarText(), /^\$\(history\) /);
      // the memory entries, read by the remote sidecar
      const entries = (await treePath(api, 'agent-home', 'Memory', 'hermes', 'MEMORY.md')).filter(
        (n) => n.kind === 'entry',
      );
      assert.ok(entries.length > 0, 'memory entries in the Agent view');
      await vscode.commands.executeCommand('agentkeep.openMemoryInspector');
      const rendered = await until('the memory inspector', () =>
        api.memoryInspector().rendered?.entries ? api.memoryInspector().rendered : undefined,
      );
      assert.equal(api.lastError(), undefined, JSON.stringify(api.lastError()));
      log(`memory inspector over the remote sidecar: ${JSON.stringify(rendered)}`);
      assert.ok((rendered.entries ?? 0) >= entries.length, 'the inspector lists the entries the view shows');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      // the CodeLens comes from the remote LSP server
      const uri = vscode.Uri.file(path.join(workspace, 'setup.sh'));
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
      const lenses = await until('CodeLenses from the remote sidecar', async () => {
        const ls = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 10);
        return ls?.some((l) => l.command?.command === 'agentkeep.snapshotAndRun') ? ls : undefined;
      });
      assert.ok(lenses.length >= 2);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      // the token is nowhere in settings or the output channel
      assert.equal(JSON.stringify(conf()).includes(TOKEN), false);
      assert.equal(api.outputText().includes(TOKEN), false);
    });

    it('creates and restores through the remote sidecar; both land in its journal', async function () {
      const rp = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'made in the editor',
      });
      assert.ok(rp, JSON.stringify(api.lastError()));
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        rp.id,
        'both',
        {
          confirm: false,
        },
      );
      assert.ok(res, JSON.stringify(api.lastError()));
      const listed = JSON.parse(
        await cli('restore-point', 'list', '--target', String(conf().get('target')), '--json'),
      ) as RestorePoint[];
      const names = listed.map((r) => r.label);
      log('remote journal:', names.join(' | '));
      assert.ok(names.includes('made in the editor'));
      assert.ok(
        names.some((n) => /^Before restoring/.test(n)),
        'the pre-restore point is in the remote journal',
      );
    });

    it('a pinned fingerprint that does not match is refused, showing the one seen', async function () {
      const wrong = 'AB:'.repeat(31) + 'AB';
      await conf().update('sidecar.fingerprint', wrong, W);
      try {
        const c = await until('the link to refuse the certificate', async () => {
          await api.refresh();
          const s = api.sidecarConnection();
          return s.kind === 'failed' ? s : undefined;
        });
        assert.equal(c.kind === 'failed' && c.error.code, 'sidecar_tls');
        const msg = c.kind === 'failed' ? `${c.error.message} ${c.error.hint}` : '';
        log(msg);
        assert.ok(
          msg.includes(`has SHA-256 fingerprint ${cert.fingerprint}, not the pinned ${wrong}; nothing was sent`),
          msg,
        );
        assert.ok(msg.includes(`set agentkeep.sidecar.fingerprint to ${cert.fingerprint}`), msg);
        assert.equal(api.getStatusBarText(), '$(debug-disconnect) AgentKeep: not connected');
      } finally {
        await conf().update('sidecar.fingerprint', cert.fingerprint, W);
      }
      await until('connected again', async () => {
        await api.refresh();
        return api.sidecarConnection().kind === 'connected';
      });
    });

    it('a killed sidecar shows "reconnecting…", calls fail at once, and the editor reconnects when it is back', async function () {
      const target = String(conf().get('target'));
      await killRemote();
      await until(
        'reconnecting in the status bar',
        () => api.getStatusBarText() === '$(debug-disconnect) AgentKeep: reconnecting…',
        10000,
        50,
      );
      const t0 = Date.now();
      await assert.rejects(
        api.sidecar.request('restorePointList', { target }),
        (e: { code?: string; message?: string }) => {
          log('a call while reconnecting:', e.message);
          return e.code === 'connection_lost' || e.code === 'sidecar_unreachable';
        },
      );
      assert.ok(Date.now() - t0 < 2000, `failed after ${Date.now() - t0} ms`);
      await startRemote(); // same port, same state dir
      await until('connected after the restart', () => api.sidecarConnection().kind === 'connected', 45000, 100);
      await until('the status bar back', () => /^\$\(history\) /.test(api.getStatusBarText()) || undefined, 10000);
      assert.ok(
        (await api.sidecar.request('restorePointList', { target })).some((r) => r.label === 'made in the editor'),
      );
    });

    it('a Proxmox guest served by the remote sidecar (which holds the PVE token): its restore points and its memory (probed through the guest agent) in the Agent view', async function () {
      await cli(
        'restore-point',
        'create',
        '--target',
        `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`,
        '--label',
        'before hermes update',
      );
      await conf().update('stores', [], W);
      await conf().update('target', `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`, W);
      const root = await until('the guest row', async () => {
        await api.refresh();
        const r = (await api.tree.getChildren())[0];
        return r && r.kind === 'agent' && r.guest ? r : undefined;
      });
      assert.equal(String(api.tree.getTreeItem(root).label), 'hermes-agent');
      const rps = await treePath(api, 'hermes-agent', 'Restore points');
      log('Proxmox restore points over the remote sidecar:', labels(api, rps).join(' | '));
      assert.ok(labels(api, rps).includes('before hermes update'));
      assert.ok(
        sim.requests.some((q) => q.headers.authorization === `PVEAPIToken=${PVE_TOKEN_ID}=${PVE_SECRET}`),
        'the remote sidecar used its own PVE token',
      );
      // the guest's memory, found by the remote sidecar probing the guest through its agent (agent/exec)
      const reach = await api.sidecar.request('agentMemoryReach', { target: String(conf().get('target')) });
      log('memory reach over the remote sidecar:', JSON.stringify(reach));
      assert.equal(reach.reachable, true, JSON.stringify(reach));
      assert.equal(reach.via, 'guest-agent');
      const store = `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/101${guestHome}`;
      assert.ok(
        reach.stores.some((s) => s.store === store && s.reachable),
        `${store} among ${JSON.stringify(reach.stores)}`,
      );
      const mem = labels(api, await treePath(api, 'hermes-agent', 'Memory'));
      assert.ok(
        mem.some((l) => l.startsWith('Found in the guest through the QEMU guest agent')),
        mem.join(' | '),
      );
      const entries = (await treePath(api, 'hermes-agent', 'Memory', 'hermes', 'MEMORY.md')).filter(
        (n) => n.kind === 'entry',
      );
      const titles = labels(api, entries);
      log("the guest's MEMORY.md over the remote sidecar:", titles.join(' | '));
      assert.ok(
        titles.some((t) => t.startsWith('Staging server 10.0.1.50')),
        titles.join(' | '),
      );
      // lint badges: no tool call in the fixture's state.db wrote these entries
      assert.ok(
        entries.some((n) => /\buntraceable\b/.test(String(api.tree.getTreeItem(n).description))),
        entries.map((n) => String(api.tree.getTreeItem(n).description)).join(' | '),
      );
      const fleet = await treePath(api, 'hermes-agent', 'Agents');
      assert.match(String(api.tree.getTreeItem(fleet[0]!).description), /· memory via guest agent/);
    });
  });
}
