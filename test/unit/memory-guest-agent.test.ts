/**
 * Memory stores inside a VM reached through the QEMU guest agent (issue 11 item 2), against a real
 * qemu-guest-agent: Debian's qemu-ga binary (scripts/qemu-ga.sh) run on this machine with
 * `-m unix-listen`, so the QGA protocol, its file handles, guest-exec and its output capture are the
 * real agent's and its "guest" is this machine. Two paths:
 *   - `hermes:qga:SOCK:/path`: the agent's socket, as a qemu: VM's virtio-serial chardev offers it;
 *   - `hermes:pve-agent://127.0.0.1:PORT/pve1/101/path`: Proxmox's agent/file-read, file-write, exec and
 *     exec-status, against the Proxmox simulator (test/pve-sim), whose agent endpoints forward to that
 *     same real qemu-ga the way qemu-server does.
 * Real flocks (python3 fcntl, as Hermes takes them), real SQLite, real files.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { storesOnHost, storesThroughAgent } from '../../sidecar/cli/agents';
import { Core } from '../../sidecar/core/core';
import { openStore, describeStore } from '../../sidecar/memory';
import type { HermesStore } from '../../sidecar/memory/hermes';
import { lockHermesFile } from '../../sidecar/memory/hermes/lock';
import { closeQgaConnections, GuestAgentTransport, QgaSocketChannel } from '../../sidecar/memory/transport/guestAgent';
import { PVE_FILE_WRITE_CHUNK } from '../../sidecar/memory/transport/pveAgent';
import type { PveSim } from '../pve-sim/server';
import { expectAgentKeepError } from './helpers/errors';
import { FIXTURES, REPO } from './helpers/paths';
import { simEnv, startSim } from './helpers/pve';
import { startQga, stopAllQga, type TestQga } from './helpers/qga';

/** A python3 process holding fcntl.flock(LOCK_EX) on `file` for `seconds`, as Hermes' memory tool does. */
async function holdLock(file: string, seconds: number): Promise<ChildProcess> {
  const code =
    'import fcntl,sys,time\nf=open(sys.argv[1],"a+")\nfcntl.flock(f,fcntl.LOCK_EX)\nprint("held",flush=True)\n' +
    'time.sleep(float(sys.argv[2]))\nfcntl.flock(f,fcntl.LOCK_UN)\nprint("released",flush=True)\nsys.stdin.read()';
  const py = spawn('python3', ['-c', code, file, String(seconds)], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    py.once('error', reject);
    py.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
  });
  return py;
}

/** Whether a non-blocking flock on `file` would block now (someone holds it). */
function isLocked(file: string): boolean {
  const code =
    'import fcntl,sys\nf=open(sys.argv[1],"a")\ntry:\n  fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print("free")\n' +
    'except BlockingIOError: print("blocked")';
  return spawnSync('python3', ['-c', code, file]).stdout.toString().trim() === 'blocked';
}

describe('memory stores through the QEMU guest agent (real qemu-ga; Proxmox path via the simulator)', function () {
  this.timeout(120000);
  let base: string;
  let qga: TestQga;
  let sim: PveSim;
  let home: string;
  let state: string;
  let viaQga: string;
  let viaPve: string;
  let local: string;
  let holder: ChildProcess | undefined;
  let savedEnv: Record<string, string | undefined>;
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');

  before(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qga-'));
    qga = await startQga(path.join(base, 'agent'));
    sim = await startSim();
    sim.addGuest({ vmid: 101, qga: qga.socket, tags: ['agent'] });
    sim.addGuest({ vmid: 102, agentConfigured: false });
    sim.addGuest({ vmid: 103, agent: false, qga: qga.socket });
    const env = simEnv(sim);
    savedEnv = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
  });
  after(async () => {
    closeQgaConnections();
    for (const [k, v] of Object.entries(savedEnv ?? {})) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await sim?.stop();
    await stopAllQga();
    await fs.rm(base, { recursive: true, force: true });
  });
  beforeEach(async () => {
    home = await fs.mkdtemp(path.join(base, 'home-'));
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), home, { recursive: true });
    state = await fs.mkdtemp(path.join(base, 'state-'));
    viaQga = `hermes:qga:${qga.socket}:${home}`;
    viaPve = `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/101${home}`;
    local = `hermes:${home}`;
  });
  afterEach(() => {
    holder?.kill('SIGKILL');
    holder = undefined;
    closeQgaConnections(); // the agent serves one client at a time; the next test may come through Proxmox
  });

  /** A result with the store's names replaced by the local store's, to compare. */
  const asLocal = (v: unknown, spec: string, prefix: string): unknown =>
    JSON.parse(JSON.stringify(v).split(JSON.stringify(spec).slice(1, -1)).join(local).split(prefix).join(''));

  it('parses qga: and pve-agent:// store strings for every kind and refuses bad ones naming the part', () => {
    const q = openStore('hermes:qga:/run/agent-vm/qga.sock:/root/.hermes') as HermesStore;
    assert.equal(q.root, '/root/.hermes');
    assert.equal(q.location, 'qga:/run/agent-vm/qga.sock:/root/.hermes');
    assert.equal(q.localRoot, undefined);
    const p = openStore('hermes:pve-agent://pve.lan/pve1/101/root/.hermes') as HermesStore;
    assert.equal(p.location, 'pve-agent://pve.lan:8006/pve1/101/root/.hermes');
    assert.equal(
      describeStore('hermes:pve-agent://pve.lan/-/101/root/.hermes').name,
      'root/.hermes in VM 101 on pve.lan',
    );
    assert.equal(
      describeStore('hermes:qga:/run/vm/qga.sock:/root/.hermes').name,
      'root/.hermes in the VM of /run/vm/qga.sock',
    );
    assert.equal(
      describeStore('agent-zero:pve-agent://pve.lan/pve1/101/a0').location,
      'pve-agent://pve.lan:8006/pve1/101/a0',
    );
    assert.equal(describeStore('mem0:qga:/s.sock:/root/.mem0').location, 'qga:/s.sock:/root/.mem0');
    assert.throws(() => openStore('hermes:qga:/run/vm/qga.sock'), /no ":\/path" inside the guest/);
    assert.throws(() => openStore('hermes:qga:rel.sock:/x'), /socket path is not absolute/);
    assert.throws(() => openStore('hermes:pve-agent://pve.lan/pve1/abc/x'), /"abc" is not a VMID/);
    assert.throws(() => openStore('hermes:pve-agent://pve.lan/pve1/101'), /no absolute path inside the guest/);
    assert.throws(() => openStore('hermes:pve-agent://pve.lan/pve1/101/x?identity=/k'), /Unknown option "identity"/);
  });

  it('list, show, provenance through the guest agent socket equal the local result', async () => {
    const core = new Core({ stateDir: state });
    const here = await core.listMemory({ stores: [local] });
    const there = await core.listMemory({ stores: [viaQga] });
    assert.ok(here.stores.length >= 3 && here.stores.some((f) => f.entries.length));
    assert.deepEqual(asLocal(there.stores, viaQga, `qga:${qga.socket}:`), here.stores);
    assert.equal(there.descriptions[0].location, `qga:${qga.socket}:${home}`);
    assert.equal(there.descriptions[0].capabilities.edit, true);
    assert.equal(there.descriptions[0].capabilities.lock, true);
    const shows = [];
    for (const e of here.stores.flatMap((f) => f.entries)) {
      const a = await core.showMemory({ stores: [viaQga], entry: e.id });
      assert.deepEqual(
        asLocal(a, viaQga, `qga:${qga.socket}:`),
        await core.showMemory({ stores: [local], entry: e.id }),
      );
      shows.push(a);
    }
    assert.ok(
      shows.some((s) => s.provenance.traces.length > 0),
      'state.db read through the agent',
    );
  });

  it('the Proxmox path (agent/file-read, exec, exec-status) lists and shows the same', async () => {
    const core = new Core({ stateDir: state });
    const here = await core.listMemory({ stores: [local] });
    const there = await core.listMemory({ stores: [viaPve] });
    const prefix = `pve-agent://127.0.0.1:${sim.port}/pve1/101`;
    assert.deepEqual(asLocal(there.stores, viaPve, prefix), here.stores);
    assert.equal(there.descriptions[0].name, `${path.basename(base)}/${path.basename(home)} in VM 101 on 127.0.0.1`);
    const used = new Set(sim.requests.map((r) => r.path.replace(/^\/nodes\/pve1\/qemu\/101\//, '')));
    for (const ep of ['agent/file-read', 'agent/exec', 'agent/exec-status']) assert.ok(used.has(ep), ep);
  });

  it("an edit waits for Hermes' flock in the guest, writes, keeps the backup with the sidecar; undo (both paths)", async () => {
    for (const store of [viaQga, viaPve]) {
      const core = new Core({ stateDir: state });
      const before = await fs.readFile(mem());
      const [entry] = (await core.listMemory({ stores: [store] })).stores[0].entries;
      holder = await holdLock(`${mem()}.lock`, 0.8);
      const t0 = Date.now();
      const r = await core.editMemory({ store, entry: entry.id, text: 'Edited through the guest agent.' });
      assert.ok(Date.now() - t0 >= 700, `waited for the lock (${Date.now() - t0} ms)`);
      assert.equal((await fs.readFile(mem(), 'utf8')).split('\n§\n')[0], 'Edited through the guest agent.');
      assert.ok(!isLocked(`${mem()}.lock`), 'our lock is released after the write');
      await core.editMemory(r.undo);
      assert.ok((await fs.readFile(mem())).equals(before), `undo through ${store}`);
      holder.kill('SIGKILL');
      holder = undefined;
      closeQgaConnections(); // the agent serves one client at a time: the simulated Proxmox host is next
    }
    const backups = await fs.readdir(path.join(state, 'memory-backups'));
    assert.ok(backups.length >= 2, 'the replaced bytes are kept by the sidecar, locally');
  });

  it('a holder that keeps the lock in the guest: TargetBusy naming the process; nothing written', async () => {
    const s = openStore(viaQga) as HermesStore;
    holder = await holdLock(`${mem()}.lock`, 30);
    const e = await expectAgentKeepError(lockHermesFile(`${mem()}.lock`, 1, s.io), 'TargetBusy', /python3/);
    assert.match(e.message, new RegExp(`on the guest agent at ${qga.socket}`));
    const before = await fs.readFile(mem());
    const core = new Core({ stateDir: state });
    const [entry] = (await core.listMemory({ stores: [viaQga] })).stores[0].entries;
    await expectAgentKeepError(core.editMemory({ store: viaQga, entry: entry.id, text: 'Never.' }), 'TargetBusy');
    assert.ok((await fs.readFile(mem())).equals(before));
  });

  it('a lock taken through the agent is held in the guest until released, then free', async () => {
    const s = openStore(viaQga) as HermesStore;
    const lock = await lockHermesFile(`${mem()}.lock`, 5, s.io);
    assert.equal(lock.held, true);
    assert.ok(isLocked(`${mem()}.lock`), 'a real flock in the guest');
    await lock.release();
    let free = false;
    for (let i = 0; i < 50 && !free; i++) {
      free = !isLocked(`${mem()}.lock`);
      if (!free) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(free, 'released');
  });

  it('a lock held through the agent by a sidecar that dies (kill -9) is released once its lease runs out', async () => {
    const q = (v: unknown): string => JSON.stringify(v);
    const script = [
      `const { lockHermesFile } = require(${q(path.join(REPO, 'sidecar/memory/hermes/lock.ts'))});`,
      `const g = require(${q(path.join(REPO, 'sidecar/memory/transport/guestAgent.ts'))});`,
      `const io = new g.GuestAgentTransport(new g.QgaSocketChannel(${q(qga.socket)}), { leaseS: 2 });`,
      `lockHermesFile(${q(`${mem()}.lock`)}, 10, io).then(`,
      "  () => console.log('held'),",
      '  (e) => { console.error(e); process.exit(1); });',
      'setInterval(() => undefined, 1000);',
    ].join('\n');
    const child = spawn(process.execPath, ['-r', 'tsx/cjs', '-e', script], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    holder = child;
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
      child.once('exit', (code) => reject(new Error(`the lock holder exited ${code}`)));
    });
    assert.ok(isLocked(`${mem()}.lock`), 'held by the flock in the guest');
    await new Promise((r) => setTimeout(r, 2500));
    assert.ok(isLocked(`${mem()}.lock`), 'still held while the sidecar renews the lease');
    child.kill('SIGKILL');
    const t0 = Date.now();
    let free = false;
    while (!free && Date.now() - t0 < 10_000) {
      await new Promise((r) => setTimeout(r, 100));
      free = !isLocked(`${mem()}.lock`);
    }
    assert.ok(free, 'released after the lease (2 s) ran out');
    assert.ok(Date.now() - t0 < 5000, `released within ${Date.now() - t0} ms of the kill`);
  });

  it('files larger than one call are chunked, byte for byte: 3 MiB over the socket, 200 KiB over Proxmox', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const io = new GuestAgentTransport(new QgaSocketChannel(qga.socket));
    const f = path.join(home, 'big.bin');
    await io.writeNew(f, data, 0o640);
    assert.ok((await fs.readFile(f)).equals(data));
    assert.equal((await fs.stat(f)).mode & 0o777, 0o640);
    assert.ok((await io.readFile(f)).equals(data));
    await assert.rejects(io.writeNew(f, data, 0o600), (e: NodeJS.ErrnoException) => e.code === 'EEXIST');
    assert.ok((await fs.readFile(f)).equals(data), 'an existing file is left alone');
    const pve = (openStore(viaPve) as HermesStore).io;
    const small = randomBytes(PVE_FILE_WRITE_CHUNK * 4 + 5);
    const before = sim.requests.length;
    const g = path.join(home, 'pve.bin');
    await pve.writeNew(g, small, 0o600);
    assert.ok((await fs.readFile(g)).equals(small));
    assert.ok((await pve.readFile(g)).equals(small));
    const writes = sim.requests.slice(before).filter((r) => r.path.endsWith('/agent/file-write'));
    assert.equal(writes.length, 5, '5 file-write calls of at most 46080 bytes (61440 base64 characters)');
    assert.ok(writes.every((w) => w.params.content.length <= 61440 && w.params.encode === '0'));
    assert.deepEqual(
      (await fs.readdir(home)).filter((n) => n.includes('.ak-part-')),
      [],
      'the part files are gone',
    );
  });

  it('a file over 16 MiB: agent/file-read says truncated, the rest is read with dd over exec', async () => {
    const data = randomBytes(16 * 1024 * 1024 + 12345);
    const f = path.join(home, 'huge.bin');
    await fs.writeFile(f, data);
    const pve = (openStore(viaPve) as HermesStore).io;
    assert.ok((await pve.readFile(f)).equals(data));
  });

  it('a guest without the agent: the error names the fix, and nothing is written (socket, Proxmox)', async () => {
    // a socket that accepts (QEMU owns the chardev) but no agent answers
    const dead = path.join(base, 'dead.sock');
    const srv = net.createServer(() => undefined);
    await new Promise<void>((r) => srv.listen(dead, r));
    try {
      const core = new Core({ stateDir: state });
      const t0 = Date.now();
      const before = await fs.readFile(mem());
      await expectAgentKeepError(
        core.addMemory({ store: `hermes:qga:${dead}:${home}`, text: 'Never.' }),
        'Unsupported',
        /No QEMU guest agent answers/,
      );
      assert.ok(Date.now() - t0 < 20_000);
      await expectAgentKeepError(
        core.addMemory({ store: `hermes:qga:${path.join(base, 'none.sock')}:${home}`, text: 'Never.' }),
        'StoreNotFound',
        /no such socket/,
      );
      const e102 = await expectAgentKeepError(
        core.addMemory({ store: `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/102${home}`, text: 'Never.' }),
        'Unsupported',
        /no QEMU guest agent configured/,
      );
      assert.match(e102.hint ?? '', /QEMU Guest Agent.*qemu-guest-agent/s);
      const e103 = await expectAgentKeepError(
        core.addMemory({ store: `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/103${home}`, text: 'Never.' }),
        'Unsupported',
        /does not answer/,
      );
      assert.match(e103.hint ?? '', /apt-get install qemu-guest-agent/);
      assert.ok((await fs.readFile(mem())).equals(before), 'nothing written');
    } finally {
      srv.close();
    }
  });

  it('errors about the guest agent path name the problem and a fix whose store strings parse (QA)', async () => {
    const core = new Core({ stateDir: state });
    /** Every `<kind>:…` store string in a hint (up to a space; a final period dropped). */
    const storesIn = (hint: string): string[] =>
      [...hint.matchAll(/\b(?:hermes|mem0|agent-zero):\S+/g)].map((m) => m[0].replace(/[.,]$/, ''));
    const parses = (hint: string): void => {
      const found = storesIn(hint);
      assert.ok(found.length, `the hint names a store string: ${hint}`);
      for (const s of found) assert.doesNotThrow(() => openStore(s), `"${s}" from the hint parses`);
    };
    // a home that does not exist in the guest: the example keeps the guest agent place (was hermes:ssh://the guest agent at …)
    const gone = `hermes:qga:${qga.socket}:${path.join(base, 'no-such-home')}`;
    const e1 = await expectAgentKeepError(core.listMemory({ stores: [gone] }), 'StoreNotFound', /does not exist/);
    assert.doesNotMatch(e1.hint ?? '', /ssh:\/\/|the guest agent at/);
    assert.match(e1.hint ?? '', new RegExp(`hermes:qga:${qga.socket}:/root/\\.hermes`));
    parses(e1.hint ?? '');
    const viaPveGone = `mem0:pve-agent://127.0.0.1:${sim.port}/pve1/101${path.join(base, 'no-mem0')}`;
    const e2 = await expectAgentKeepError(core.listMemory({ stores: [viaPveGone] }), 'StoreNotFound');
    assert.match(e2.hint ?? '', /mem0:pve-agent:\/\/127\.0\.0\.1:\d+\/pve1\/101\/home\/me\/\.mem0/);
    parses(e2.hint ?? '');
    closeQgaConnections();
    // no such socket: the hint names the real part of the store string (there is no ?socket= option)
    const none = await expectAgentKeepError(
      core.listMemory({ stores: [`hermes:qga:${path.join(base, 'none.sock')}:${home}`] }),
      'StoreNotFound',
      /no such socket/,
    );
    assert.doesNotMatch(none.hint ?? '', /\?socket=/);
    assert.match(none.hint ?? '', /socket path \(between "qga:" and ":\/path\/in\/guest"\)/);
    parses(none.hint ?? '');
    // a regular file (a disk image) or a folder where the socket should be: "not a socket", not "nothing listens"
    const image = path.join(base, 'disk.qcow2');
    await fs.writeFile(image, 'QFI\xfb');
    for (const [p, kind] of [
      [image, 'regular file'],
      [base, 'directory'],
    ]) {
      const e = await expectAgentKeepError(
        core.listMemory({ stores: [`hermes:qga:${p}:${home}`] }),
        'BadStore',
        new RegExp(`${p} is not a socket but a ${kind}`),
      );
      assert.doesNotMatch(e.message, /nothing listens/);
      parses(e.hint ?? '');
    }
    // a socket file nobody listens on (the VM stopped and left it): said so
    const left = path.join(base, 'left.sock');
    spawnSync('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', left]);
    assert.ok((await fs.stat(left)).isSocket());
    await expectAgentKeepError(
      core.listMemory({ stores: [`hermes:qga:${left}:${home}`] }),
      'StoreNotFound',
      /nothing listens on it/,
    );
  });

  it('a lock file root may not open in the guest (immutable): named with the fix, no ssh:// advice (QA)', async () => {
    const lock = path.join(home, 'memories', 'MEMORY.md.lock');
    await fs.writeFile(lock, '');
    spawnSync('chattr', ['+i', lock]);
    try {
      const before = await fs.readFile(mem());
      const e = await expectAgentKeepError(
        new Core({ stateDir: state }).addMemory({ store: viaQga, text: 'Never.' }),
        'FileError',
        /Cannot open Hermes' memory lock qga:.*MEMORY\.md\.lock/,
      );
      assert.doesNotMatch(`${e.message} ${e.hint}`, /ssh:\/\/|not writable for root/);
      assert.match(e.message, /immutable|read-only/);
      assert.match(e.hint ?? '', /lsattr .*MEMORY\.md\.lock.*chattr -i/);
      assert.match(e.hint ?? '', /^In the guest, look at the flags/);
      assert.ok((await fs.readFile(mem())).equals(before), 'nothing written');
    } finally {
      spawnSync('chattr', ['-i', lock]);
    }
  });

  it('capture in a restore point of a dir: target and a scope agent restore through the agent', async () => {
    const tree = await fs.mkdtemp(path.join(base, 'tree-'));
    await fs.writeFile(path.join(tree, 'app.txt'), 'v1\n');
    const target = `dir:${tree}`;
    const core = new Core({ stateDir: state });
    const before = await fs.readFile(mem());
    const rp = await core.createRestorePoint({ target, stores: [viaQga] });
    const cap = rp.agent.find((a) => a.store === viaQga)!;
    assert.ok(cap.files.some((f) => f.path === 'memories/MEMORY.md'));
    assert.ok(cap.files.some((f) => f.path === 'state.db'));
    await fs.writeFile(mem(), 'Replaced by the agent.');
    const diff = await core.diffMemory({ target, from: rp.id });
    assert.ok([...diff.added, ...diff.changed].some((c) => c.after?.text === 'Replaced by the agent.'));
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: [viaQga] });
    assert.ok((await fs.readFile(mem())).equals(before), 'MEMORY.md written back through the agent');
  });

  it('agent.memoryReach: a VM probed through its guest agent finds the running Hermes home; the reasons when not', async () => {
    // a "running Hermes" in the guest: a process whose environment names the home
    const hermes = spawn('sleep', ['60'], { env: { ...process.env, HERMES_HOME: home }, stdio: 'ignore' });
    holder = hermes;
    const core = new Core({ stateDir: state });
    const vm = (vmid: number): string => `proxmox://127.0.0.1:${sim.port}/pve1/qemu/${vmid}`;
    const r = await core.agentMemoryReach({ target: vm(101) });
    assert.equal(r.reachable, true, JSON.stringify(r));
    assert.equal(r.via, 'guest-agent');
    assert.equal(r.found, true);
    assert.match(r.how, /QEMU guest agent/);
    const spec = `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/101${home}`;
    const it = r.stores.find((s) => s.store === spec);
    assert.ok(it?.reachable, JSON.stringify(r.stores));
    assert.equal(it.description?.kind, 'hermes');
    // and the store found lists like the local one
    const listed = await core.listMemory({ stores: [spec] });
    assert.ok(listed.stores.some((f) => f.entries.length));
    // named stores say how each is reached
    const named = await core.agentMemoryReach({ target: vm(101), stores: [viaQga, local] });
    assert.deepEqual(
      named.stores.map((s) => [s.via, s.reachable]),
      [
        ['guest-agent', true],
        ['local', true],
      ],
    );
    assert.equal(named.found, false);
    assert.match(named.how, /socket/);
    const noAgent = await core.agentMemoryReach({ target: vm(102) });
    assert.equal(noAgent.reachable, false);
    assert.equal(noAgent.via, 'none');
    assert.match(noAgent.reason ?? '', /no QEMU guest agent configured/);
    assert.match(noAgent.hint ?? '', /QEMU Guest Agent/);
    const stopped = await core.agentMemoryReach({ target: vm(103) });
    assert.match(stopped.reason ?? '', /does not answer/);
    sim.addGuest({ vmid: 104, type: 'lxc' });
    const ct = await core.agentMemoryReach({ target: `proxmox://127.0.0.1:${sim.port}/pve1/lxc/104` });
    assert.match(ct.reason ?? '', /Containers have no QEMU guest agent/);
    const broken = await core.agentMemoryReach({ target: vm(101), stores: [`hermes:qga:${base}/none.sock:${home}`] });
    assert.equal(broken.reachable, false);
    assert.match(broken.reason ?? '', /no such socket/);
  });

  it('agent add --via guest-agent / --via qga:SOCK names the stores in the guest once', async () => {
    const target = `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`;
    const stores = storesThroughAgent(
      [`hermes:${home}`, 'agent-zero:/a0?url=http://10.0.0.5:50001'],
      target,
      'guest-agent',
    );
    assert.deepEqual(stores, [
      viaPve,
      `agent-zero:pve-agent://127.0.0.1:${sim.port}/pve1/101/a0?url=http://10.0.0.5:50001`,
    ]);
    assert.deepEqual(storesThroughAgent([`hermes:${home}`], 'dir:/x', `qga:${qga.socket}`), [viaQga]);
    assert.throws(() => storesThroughAgent([`hermes:${home}`], 'dir:/x', 'guest-agent'), /needs a Proxmox VM target/);
    assert.throws(() => storesThroughAgent([], target, 'guest-agent'), /needs the stores in the guest/);
    assert.throws(() => storesThroughAgent([`hermes:${home}`], target, 'telnet'), /Bad --via "telnet"/);
    // a qga socket path the store string cannot carry: the problem named (QA)
    assert.throws(
      () => storesThroughAgent([`hermes:${home}`], 'dir:/x', 'qga:run/q.sock'),
      /socket path is not absolute/,
    );
    assert.throws(
      () => storesThroughAgent([`hermes:${home}`], 'dir:/x', 'qga:/run/vm:/q.sock'),
      /the socket path holds ":\/", which a qga: store string cannot carry/,
    );
    const colon = storesThroughAgent(['hermes:/root/.hermes'], 'dir:/x', 'qga:/run/vm:1/q.sock');
    assert.equal((openStore(colon[0]) as HermesStore).location, 'qga:/run/vm:1/q.sock:/root/.hermes');
    assert.throws(() => storesThroughAgent([`hermes:${home}`], 'dir:/x', 'qga:'), /no socket path after qga:/);
    // a store that names its own place would silently keep it: refused (QA)
    assert.throws(
      () => storesThroughAgent([`hermes:ssh://root@127.0.0.1:22/root/.hermes`], target, 'guest-agent'),
      /--via guest-agent applies to stores given as <kind>:\/abs\/path, and hermes:ssh:\/\/.* is not one/,
    );
    assert.throws(
      () => storesOnHost([viaQga], 'root@10.0.0.9'),
      /--ssh root@10\.0\.0\.9 applies to stores given as <kind>:\/abs\/path/,
    );
    const core = new Core({ stateDir: state });
    await core.addAgent({ name: 'vm101', target, stores: [stores[0]] });
    const listed = await core.listMemory({ stores: (await core.listAgents({})).agents[0].stores! });
    assert.ok(
      listed.stores.some((f) => f.entries.length),
      'the named stores are read through the guest agent',
    );
  });
});
