/**
 * Memory stores on another machine over SSH (issue 11 item 1: Hermes, Agent Zero, mem0), against a real OpenSSH server
 * (Debian's openssh-server) that the tests start on 127.0.0.1 with a temporary host key, client key
 * and known_hosts (./helpers/sshd.ts). The "other machine" is this one seen through sshd: the Hermes
 * home is a temp copy of test/fixtures/memory/hermes, reached as `hermes:ssh://user@127.0.0.1:PORT/…`,
 * and its sessions get a PATH of their own (a `node` 18 and a `hermes` 9.9 that this machine does not
 * have), so stale claims show where they were checked. Real flocks (python3 fcntl, as Hermes takes
 * them), real SQLite, the real CLI bundle with native modules refused.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promises as fs, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { openStore } from '../../sidecar/memory';
import { lockHermesFile } from '../../sidecar/memory/hermes/lock';
import type { HermesStore } from '../../sidecar/memory/hermes';
import { closeSshConnections, openSshConnections, SshTransport } from '../../sidecar/memory/transport/ssh';
import { FIXTURES, REPO } from './helpers/paths';
import { expectAgentKeepError } from './helpers/errors';
import { buildSidecar, cliRunner, runSidecar } from './helpers/sidecar';
import { freePort, startSshd, type TestSshd } from './helpers/sshd';

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

/** `SHA256:…` of a public key file, from ssh-keygen -lf. */
function keyFingerprint(pub: string): string {
  return /SHA256:\S+/.exec(spawnSync('ssh-keygen', ['-lf', pub]).stdout.toString())![0];
}

describe('memory stores over SSH (real OpenSSH on 127.0.0.1)', function () {
  this.timeout(120000);
  let sshd: TestSshd;
  let base: string;
  let fakeBin: string;
  let home: string;
  let state: string;
  let remote: string;
  let local: string;
  let holder: ChildProcess | undefined;
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');

  before(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-ssh-'));
    fakeBin = path.join(base, 'bin');
    await fs.mkdir(fakeBin);
    // the other machine's own tools: a node 18 and a hermes 9.9 this machine does not have
    await fs.writeFile(path.join(fakeBin, 'node'), '#!/bin/sh\necho v18.19.1\n', { mode: 0o755 });
    await fs.writeFile(path.join(fakeBin, 'hermes'), '#!/bin/sh\necho "Hermes Agent v9.9.1"\n', { mode: 0o755 });
    sshd = await startSshd({ path: [fakeBin] });
  });
  after(async () => {
    closeSshConnections();
    await sshd?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });
  beforeEach(async () => {
    home = await fs.mkdtemp(path.join(base, 'home-'));
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), home, { recursive: true });
    state = await fs.mkdtemp(path.join(base, 'state-'));
    remote = `hermes:${sshd.url(home)}`;
    local = `hermes:${home}`;
  });
  afterEach(() => {
    holder?.kill('SIGKILL');
    holder = undefined;
  });

  /** A result of the SSH store with its names replaced by the local store's, to compare. */
  const asLocal = (v: unknown, spec = remote): unknown =>
    JSON.parse(
      JSON.stringify(v)
        .split(JSON.stringify(spec).slice(1, -1))
        .join(local)
        .split(`ssh://${sshd.user}@127.0.0.1:${sshd.port}`)
        .join(''),
    );

  it('parses ssh:// store strings and refuses bad ones naming the part', () => {
    const s = openStore('hermes:ssh://root@10.0.0.5:2222/root/.hermes') as HermesStore;
    assert.equal(s.location, 'ssh://root@10.0.0.5:2222/root/.hermes');
    assert.equal(s.localRoot, undefined);
    assert.equal(s.root, '/root/.hermes');
    assert.equal(
      (openStore('hermes:ssh://10.0.0.5/root/.hermes') as HermesStore).location,
      `ssh://${os.userInfo().username}@10.0.0.5:22/root/.hermes`,
    );
    assert.throws(() => openStore('hermes:ssh://root@10.0.0.5'), /no path after the host/);
    assert.throws(() => openStore('hermes:ssh://root@10.0.0.5:99999/x'), /BadStore|port|Invalid/);
    assert.throws(() => openStore('hermes:ssh://root@10.0.0.5/x?identity=rel/key'), /not an absolute path/);
    assert.throws(() => openStore('hermes:ssh://root@10.0.0.5/x?color=red'), /Unknown option "color"/);
    assert.throws(() => openStore('hermes:ssh://root:pw@10.0.0.5/x'), /password/);
  });

  it('list, show, provenance over SSH equal the local result; one connection, closed when idle', async () => {
    const core = new Core({ stateDir: state });
    const viaSsh = await core.listMemory({ stores: [remote] });
    const here = await core.listMemory({ stores: [local] });
    assert.ok(here.stores.length >= 3 && here.stores.some((f) => f.entries.length));
    assert.deepEqual(asLocal(viaSsh.stores), here.stores);
    assert.match(viaSsh.stores[0].file, /^ssh:\/\/.*\/memories\/MEMORY\.md$/);
    // described as a store without a local root, at its ssh:// location
    assert.equal(viaSsh.descriptions[0].location, `ssh://${sshd.user}@127.0.0.1:${sshd.port}${home}`);
    assert.equal(viaSsh.descriptions[0].localRoot, undefined);
    assert.equal(
      viaSsh.descriptions[0].name,
      `${path.basename(base)}/${path.basename(home)} on ${sshd.user}@127.0.0.1:${sshd.port}`,
    );
    assert.equal(viaSsh.descriptions[0].capabilities.edit, true);
    assert.equal(viaSsh.descriptions[0].capabilities.lock, true);
    assert.equal(openSshConnections(), 1, 'one connection for the whole batch');
    for (const f of here.stores) {
      for (const e of f.entries) {
        const a = await core.showMemory({ stores: [remote], entry: e.id });
        const b = await core.showMemory({ stores: [local], entry: e.id });
        assert.deepEqual(asLocal(a), b, `show ${e.id}`);
      }
    }
    // state.db holds traced writes: provenance over SSH read the copy of state.db (+ WAL)
    const shows = await Promise.all(
      here.stores.flatMap((f) => f.entries).map((e) => core.showMemory({ stores: [remote], entry: e.id })),
    );
    assert.ok(
      shows.some((s) => s.provenance.traces.length > 0),
      'some entry is traced to a state.db tool call',
    );
    assert.equal(openSshConnections(), 1);
    await new Promise((r) => setTimeout(r, 2600));
    assert.equal(openSshConnections(), 0, 'closed 2 s after the last operation');
  });

  it('reads state.db with its WAL (committed frames applied), never writing it', async () => {
    // a WAL-mode history whose newest write is only in the -wal file
    const db = path.join(home, 'state.db');
    const py = [
      'import sqlite3,sys,json',
      'c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA wal_autocheckpoint=0")',
      'args=json.dumps({"action":"add","target":"memory","content":"Only in the WAL."})',
      'calls=json.dumps([{"id":"w1","type":"function","function":{"name":"memory","arguments":args}}])',
      'c.execute("INSERT INTO messages(session_id, role, content, tool_calls, timestamp) VALUES (?,?,?,?,?)",' +
        ' ((c.execute("SELECT id FROM sessions LIMIT 1").fetchone() or [None])[0],' +
        ' "assistant", "", calls, 1767225600.0))',
      'c.commit()',
      'import os; print(os.path.getsize(sys.argv[1]+"-wal"))',
      'sys.stdin.read()',
    ].join('\n');
    const writer = spawn('python3', ['-c', py, db], { stdio: ['pipe', 'pipe', 'inherit'] });
    holder = writer;
    const walSize = await new Promise<number>((resolve, reject) => {
      writer.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString())));
      writer.once('exit', (code) => reject(new Error(`the python writer exited ${code}`)));
    });
    assert.ok(walSize > 0, 'the write sits in state.db-wal');
    await fs.appendFile(mem(), '\n§\nOnly in the WAL.');
    const before = await fs.readFile(db);
    const wal = await fs.readFile(`${db}-wal`);
    const core = new Core({ stateDir: state });
    const list = await core.listMemory({ stores: [remote] });
    const e = list.stores[0].entries.find((x) => x.text === 'Only in the WAL.')!;
    const show = await core.showMemory({ stores: [remote], entry: e.id });
    assert.equal(show.provenance.traces.length, 1, JSON.stringify(show.provenance));
    assert.equal(show.provenance.traces[0].time, '2026-01-01T00:00:00.000Z');
    assert.ok((await fs.readFile(db)).equals(before), 'state.db not written');
    assert.ok((await fs.readFile(`${db}-wal`)).equals(wal), 'state.db-wal not written');
  });

  it("an edit over SSH waits for Hermes' flock there, writes, keeps the backup with the sidecar; undo", async () => {
    const core = new Core({ stateDir: state });
    const before = await fs.readFile(mem());
    const [entry] = (await core.listMemory({ stores: [remote] })).stores[0].entries;
    holder = await holdLock(`${mem()}.lock`, 0.8);
    const t0 = Date.now();
    const r = await core.editMemory({ store: remote, entry: entry.id, text: 'Edited over SSH.' });
    assert.ok(Date.now() - t0 >= 700, `waited for the lock (${Date.now() - t0} ms)`);
    assert.match((await fs.readFile(mem(), 'utf8')).split('\n§\n')[0], /^Edited over SSH\.$/);
    assert.equal(r.entry.file, `ssh://${sshd.user}@127.0.0.1:${sshd.port}${mem()}`);
    // the bytes it replaced are kept by the sidecar, locally
    const backups = await fs.readdir(path.join(state, 'memory-backups'));
    assert.equal(backups.length, 1);
    const kept = (await fs.readdir(path.join(state, 'memory-backups', backups[0]))).filter((f) =>
      f.endsWith('-MEMORY.md'),
    );
    assert.equal(kept.length, 1);
    assert.ok((await fs.readFile(path.join(state, 'memory-backups', backups[0], kept[0]))).equals(before));
    // undo (the params memory.edit returned) restores the old text over SSH
    await core.editMemory(r.undo);
    assert.ok((await fs.readFile(mem())).equals(before));
    // remove + add back, and the write log traces the re-added entry to AgentKeep
    const rm = await core.removeMemory({ store: remote, entry: entry.id });
    assert.ok(!(await fs.readFile(mem(), 'utf8')).includes(entry.text));
    await core.addMemory(rm.undo);
    assert.ok((await fs.readFile(mem(), 'utf8')).includes(entry.text));
  });

  it('a holder that keeps the remote lock: TargetBusy naming the process there; nothing written', async () => {
    const s = openStore(remote) as HermesStore;
    holder = await holdLock(`${mem()}.lock`, 30);
    const e = await expectAgentKeepError(lockHermesFile(`${mem()}.lock`, 1, s.io), 'TargetBusy', /python3/);
    assert.match(e.message, new RegExp(`on ${sshd.user}@127\\.0\\.0\\.1:${sshd.port}`));
    const before = await fs.readFile(mem());
    const core = new Core({ stateDir: state });
    const [entry] = (await core.listMemory({ stores: [remote] })).stores[0].entries;
    // the store's own wait (10 s) then TargetBusy, the file byte-identical
    await expectAgentKeepError(
      core.editMemory({ store: remote, entry: entry.id, text: 'Never written.' }),
      'TargetBusy',
    );
    assert.ok((await fs.readFile(mem())).equals(before));
  });

  it('a lock held over SSH dies with the process holding it (kill -9): Hermes can write again', async () => {
    const loc = { user: sshd.user, host: '127.0.0.1', port: sshd.port, path: home };
    const q = (v: unknown): string => JSON.stringify(v);
    const script = [
      `const { lockHermesFile } = require(${q(path.join(REPO, 'sidecar/memory/hermes/lock.ts'))});`,
      `const { SshTransport } = require(${q(path.join(REPO, 'sidecar/memory/transport/ssh.ts'))});`,
      `const io = new SshTransport(${q({ ...loc, identity: sshd.clientKey, knownHosts: sshd.knownHosts })});`,
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
    assert.ok(isLocked(`${mem()}.lock`), 'held by the flock on the other side');
    child.kill('SIGKILL');
    let free = false;
    for (let i = 0; i < 100 && !free; i++) {
      await new Promise((r) => setTimeout(r, 100));
      free = !isLocked(`${mem()}.lock`);
    }
    assert.ok(free, 'the lock was released when the connection died');
  });

  it('compare-and-swap: an edit with the hash of an older read is refused, nothing written', async () => {
    const core = new Core({ stateDir: state });
    const [entry] = (await core.listMemory({ stores: [remote] })).stores[0].entries;
    const shown = await core.showMemory({ stores: [remote], entry: entry.id });
    await fs.appendFile(mem(), '\n§\nWritten by Hermes meanwhile.');
    const now = await fs.readFile(mem());
    await expectAgentKeepError(
      core.editMemory({ store: remote, entry: entry.id, text: 'Stale edit.', expectedHash: shown.contentHash }),
      'Conflict',
      /changed since it was read/,
    );
    assert.ok((await fs.readFile(mem())).equals(now));
  });

  it('a remote whose flock cannot be found (exit 127) refuses the write, naming the fix', async () => {
    const fake = path.join(fakeBin, 'flock');
    await fs.writeFile(fake, '#!/bin/sh\necho "sh: 1: flock: not found" >&2\nexit 127\n', { mode: 0o755 });
    try {
      const core = new Core({ stateDir: state });
      const before = await fs.readFile(mem());
      await expectAgentKeepError(
        core.addMemory({ store: remote, text: 'Never written.' }),
        'Unsupported',
        /no flock program.*util-linux/s,
      );
      assert.ok((await fs.readFile(mem())).equals(before));
    } finally {
      await fs.rm(fake, { force: true });
    }
  });

  it('lint checks stale claims on the remote machine (its PATH, its tool versions), not on this one', async () => {
    await fs.writeFile(mem(), 'The agent runs hermes 9.9 on its host.\n§\nProject uses Node 20 for the build.');
    const core = new Core({ stateDir: state });
    const stale = (fs: Array<{ kind: string; message: string }>): string[] =>
      fs.filter((f) => f.kind === 'stale').map((f) => f.message);
    const viaSsh = stale((await core.lintMemory({ stores: [remote] })).findings);
    const here = stale((await core.lintMemory({ stores: [local] })).findings);
    const where = `${sshd.user}@127.0.0.1:${sshd.port}`;
    // remote: hermes 9.9.1 is there; node is 18 there (this machine's node is 20)
    assert.ok(!viaSsh.some((m) => /hermes/.test(m)), viaSsh.join('\n'));
    assert.ok(
      viaSsh.some((m) => m.includes(`disagrees with ${where}`) && /node 18\.19\.1/.test(m)),
      viaSsh.join('\n'),
    );
    // here: no hermes on PATH; node agrees
    assert.ok(
      here.some((m) => /hermes is not installed on this machine/.test(m)),
      here.join('\n'),
    );
    assert.ok(!here.some((m) => /Node 20/.test(m)), here.join('\n'));
  });

  it('capture in a restore point of a dir: target, memory diff, a scope agent restore over SSH', async () => {
    const tree = await fs.mkdtemp(path.join(base, 'tree-'));
    await fs.writeFile(path.join(tree, 'app.txt'), 'v1\n');
    const target = `dir:${tree}`;
    const core = new Core({ stateDir: state });
    const before = await fs.readFile(mem());
    const rp = await core.createRestorePoint({ target, stores: [remote] });
    const cap = rp.agent.find((a) => a.store === remote)!;
    assert.ok(cap.files.some((f) => f.path === 'memories/MEMORY.md'));
    assert.ok(cap.files.some((f) => f.path === 'state.db'));
    // the agent changes its memory and the machine changes too
    await fs.writeFile(mem(), 'Replaced by the agent.');
    await fs.writeFile(path.join(tree, 'app.txt'), 'v2\n');
    const diff = await core.diffMemory({ target, from: rp.id });
    const after = [...diff.added, ...diff.changed].map((c) => c.after?.text);
    assert.ok(after.includes('Replaced by the agent.'), JSON.stringify(diff));
    assert.ok(diff.removed.length + diff.changed.length >= 4);
    holder = await holdLock(`${mem()}.lock`, 0.6);
    const t0 = Date.now();
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: [remote] });
    assert.ok(Date.now() - t0 >= 500, "the restore waited for Hermes' lock on the remote");
    assert.ok((await fs.readFile(mem())).equals(before), 'MEMORY.md written back over SSH');
    assert.equal(await fs.readFile(path.join(tree, 'app.txt'), 'utf8'), 'v2\n', 'scope agent leaves the machine alone');
  });

  it('Agent Zero and mem0 over SSH: list and show equal local; capture and a scope agent restore', async () => {
    const a0 = await fs.mkdtemp(path.join(base, 'a0-'));
    await fs.cp(path.join(FIXTURES, 'memory', 'agent-zero'), a0, { recursive: true });
    const m0 = await fs.mkdtemp(path.join(base, 'mem0-'));
    await fs.cp(path.join(FIXTURES, 'memory', 'mem0'), m0, { recursive: true });
    const core = new Core({ stateDir: state });
    const pairs: Array<[string, string]> = [
      [`agent-zero:${sshd.url(a0)}`, `agent-zero:${a0}`],
      [`mem0:${sshd.url(m0)}`, `mem0:${m0}`],
    ];
    for (const [r, l] of pairs) {
      const viaSsh = await core.listMemory({ stores: [r] });
      const here = await core.listMemory({ stores: [l] });
      const same = (v: unknown): unknown => JSON.parse(JSON.stringify(asLocal(v, r)).split(local).join(l));
      assert.ok(
        here.stores.some((f) => f.entries.length),
        l,
      );
      assert.deepEqual(same(viaSsh.stores), here.stores, r);
      assert.equal(viaSsh.descriptions[0].localRoot, undefined);
      const e = here.stores.find((f) => f.entries.length)!.entries[0];
      assert.deepEqual(
        same(await core.showMemory({ stores: [r], entry: e.id })),
        await core.showMemory({ stores: [l], entry: e.id }),
      );
      // memory lint's vectors (index.faiss rows, Qdrant point vectors) are read over SSH the same
      const vectors = async (spec: string): Promise<Array<[string, string, number[]]>> =>
        [...(await openStore(spec).lintProfile!.embeddings!()).vectors]
          // an unknown model is named with its store's place (local path vs ssh://…): compare the rest
          .map(([k, v]): [string, string, number[]] => [
            k.split('\0')[1],
            v.model.replace(/^((?:mem0|agent-zero):unknown-model) .*$/, '$1'),
            [...v.vector],
          ])
          .sort((x, y) => x[0].localeCompare(y[0]));
      const localVectors = await vectors(l);
      assert.ok(localVectors.length > 0, `${l} keeps vectors`);
      assert.deepEqual(await vectors(r), localVectors, r);
    }
    // capture both in a restore point of a dir: target, damage them, restore scope agent over SSH
    const tree = await fs.mkdtemp(path.join(base, 'tree-'));
    const target = `dir:${tree}`;
    const files = [
      path.join(a0, 'usr/memory/default/index.pkl'),
      path.join(a0, 'usr/memory/default/embedding.json'),
      path.join(m0, 'history.db'),
      path.join(m0, 'qdrant/collection/mem0/storage.sqlite'),
    ];
    const before = await Promise.all(files.map((f) => fs.readFile(f)));
    const rp = await core.createRestorePoint({ target, stores: pairs.map(([r]) => r) });
    assert.equal(rp.agent.length, 2);
    assert.ok(
      rp.agent.every((a) => a.files.length >= 2),
      JSON.stringify(rp.agent),
    );
    await fs.writeFile(files[1], '{"model_provider":"other","model_name":"x"}');
    await fs.rm(files[0]);
    await fs.rm(files[3]);
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: pairs.map(([r]) => r) });
    for (const [i, f] of files.entries())
      assert.ok((await fs.readFile(f)).equals(before[i]), `${f} written back over SSH`);
  });

  it('the CLI bundle works over SSH with every native module refused (ssh2 runs pure JS) ', async () => {
    await buildSidecar();
    const blocker = path.join(base, 'no-native.js');
    writeFileSync(
      blocker,
      "require('module')._extensions['.node'] = (m, f) => { throw new Error('native module refused: ' + f); };\n",
    );
    const r = await runSidecar(['memory', 'list', '--store', remote, '--json'], {
      NODE_OPTIONS: `--require ${blocker}`,
    });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { stores: Array<{ entries: unknown[] }> };
    assert.equal(out.stores[0].entries.length, 4);
  });

  it('agent add --ssh names the machine once: its stores are reached over SSH by every command', async () => {
    await buildSidecar();
    const { json, ak } = cliRunner(() => state);
    const tree = await fs.mkdtemp(path.join(base, 'tree-'));
    const q = `?identity=${sshd.clientKey}&known_hosts=${sshd.knownHosts}`;
    const ssh = `${sshd.user}@127.0.0.1:${sshd.port}`;
    const a = await json(
      'agent',
      'add',
      'vm',
      '--target',
      `dir:${tree}`,
      '--ssh',
      ssh,
      '--store',
      `hermes:${home}${q}`,
    );
    assert.deepEqual(a.stores, [`hermes:ssh://${ssh}${home}${q}`]);
    const list = await json('memory', 'list', '--agent', 'vm');
    assert.equal(list.stores[0].entries.length, 4);
    assert.equal(list.descriptions[0].location, `ssh://${ssh}${home}`);
    const bad = await ak('agent', 'add', 'vm2', '--target', `dir:${tree}`, '--ssh', ssh);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--ssh needs the stores on that machine/);
  });

  it('an unknown host key: refused with its fingerprint and the accept command, which works; hashed', async () => {
    const kh = path.join(base, 'known_hosts.empty');
    await fs.writeFile(kh, '');
    const spec = `hermes:${sshd.url(home, { known_hosts: kh })}`;
    const fp = keyFingerprint(path.join(sshd.dir, 'host_ed25519.pub'));
    const e = await expectAgentKeepError(openStore(spec).list(), 'AuthFailed', /not in .*known_hosts\.empty/);
    assert.ok(e.message.includes(fp), `${e.message} names ${fp}`);
    const accept = new RegExp(`ssh-keyscan -p ${sshd.port} -t ed25519 127\\.0\\.0\\.1 >> (\\S+)`).exec(e.hint ?? '');
    assert.ok(accept, e.hint);
    assert.equal(accept[1], kh);
    // run the command the hint names: then the store opens
    const scan = spawnSync('sh', ['-c', accept[0]]);
    assert.equal(scan.status, 0, scan.stderr.toString());
    assert.equal((await openStore(spec).list())[0].entries.length, 4);
    // hashed known_hosts (HashKnownHosts yes) match too
    assert.equal(spawnSync('ssh-keygen', ['-H', '-f', kh]).status, 0);
    assert.match(await fs.readFile(kh, 'utf8'), /^\|1\|/);
    closeSshConnections();
    assert.equal((await openStore(spec).list())[0].entries.length, 4);
  });

  it('bad input: unreachable host, wrong key, not a Hermes home: errors naming the fix, nothing written', async () => {
    const port = await freePort();
    await expectAgentKeepError(
      openStore(
        `hermes:ssh://${sshd.user}@127.0.0.1:${port}${home}?known_hosts=${sshd.knownHosts}&identity=${sshd.clientKey}`,
      ).list(),
      'StoreNotFound',
      /refused the connection.*sshd runs on port/s,
    );
    const wrong = path.join(base, 'wrong_ed25519');
    await fs.rm(wrong, { force: true });
    spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', wrong]);
    const env = process.env.SSH_AUTH_SOCK;
    delete process.env.SSH_AUTH_SOCK;
    try {
      await expectAgentKeepError(
        openStore(`hermes:${sshd.url(home, { identity: wrong })}`).list(),
        'AuthFailed',
        /accepted none of the keys tried.*wrong_ed25519.*ssh-copy-id/s,
      );
    } finally {
      if (env !== undefined) process.env.SSH_AUTH_SOCK = env;
    }
    const empty = await fs.mkdtemp(path.join(base, 'empty-'));
    await expectAgentKeepError(openStore(`hermes:${sshd.url(empty)}`).list(), 'StoreNotFound', /Not a Hermes home/);
    await expectAgentKeepError(
      openStore(`hermes:${sshd.url(path.join(base, 'nope'))}`).list(),
      'StoreNotFound',
      /does not exist/,
    );
    assert.deepEqual(await fs.readdir(empty), []);
  });

  it('logs in with a key from the SSH agent (SSH_AUTH_SOCK) when no ?identity= is given', async () => {
    const sock = path.join(base, 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    const saved = process.env.SSH_AUTH_SOCK;
    try {
      for (let i = 0; i < 100 && !(await fs.stat(sock).catch(() => undefined)); i++)
        await new Promise((r) => setTimeout(r, 50));
      const add = spawnSync('ssh-add', [sshd.clientKey], { env: { ...process.env, SSH_AUTH_SOCK: sock } });
      assert.equal(add.status, 0, add.stderr.toString());
      process.env.SSH_AUTH_SOCK = sock;
      closeSshConnections();
      const spec = `hermes:ssh://${sshd.user}@127.0.0.1:${sshd.port}${home}?known_hosts=${sshd.knownHosts}`;
      assert.equal((await openStore(spec).list())[0].entries.length, 4);
    } finally {
      if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
      else process.env.SSH_AUTH_SOCK = saved;
      closeSshConnections();
      agent.kill();
    }
  });

  it('timeouts name the host and the step: a server that never speaks SSH, a stopped session', async () => {
    // a TCP server that accepts and stays silent: the handshake times out (connect budget 1 s here)
    const silent = net.createServer((sock) => sock.on('error', () => undefined));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const loc = {
        user: sshd.user,
        host: '127.0.0.1',
        port,
        path: home,
        identity: sshd.clientKey,
        knownHosts: sshd.knownHosts,
      };
      const t0 = Date.now();
      await expectAgentKeepError(
        new SshTransport(loc, { connectMs: 1000 }).stat(home),
        'StoreNotFound',
        new RegExp(`SSH to ${sshd.user}@127\\.0\\.0\\.1:${port}: .*timed out after 1 s`),
      );
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      silent.close();
    }
    // a live connection whose sshd session is stopped (SIGSTOP): the next operation times out (1 s here)
    closeSshConnections();
    const io = new SshTransport(
      {
        user: sshd.user,
        host: '127.0.0.1',
        port: sshd.port,
        path: home,
        identity: sshd.clientKey,
        knownHosts: sshd.knownHosts,
      },
      { opMs: 1000 },
    );
    await io.stat(home);
    const pids = sshd.sessions();
    assert.ok(pids.length >= 1);
    // a session process may end between the listing and the signal (ESRCH): those need no stopping
    const signal = (pid: number, sig: NodeJS.Signals): void => {
      try {
        process.kill(pid, sig);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    };
    for (const pid of pids) signal(pid, 'SIGSTOP');
    try {
      await expectAgentKeepError(
        io.readFile(mem()),
        'FileError',
        new RegExp(`SSH ${sshd.user}@127\\.0\\.0\\.1:${sshd.port}: read ssh://.*MEMORY\\.md timed out after 1 s`),
      );
    } finally {
      for (const pid of pids) {
        signal(pid, 'SIGCONT');
        signal(pid, 'SIGTERM');
      }
    }
    // the connection was dropped: the next call connects again and works
    assert.ok((await io.readFile(mem())).length > 0);
    closeSshConnections();
  });

  it('a changed host key is refused (fingerprints old and new, the fix), nothing written', async () => {
    const before = await fs.readFile(mem());
    const oldFp = keyFingerprint(path.join(sshd.dir, 'host_ed25519.pub'));
    closeSshConnections();
    await sshd.rekey();
    const newFp = keyFingerprint(path.join(sshd.dir, 'host_ed25519.pub'));
    const core = new Core({ stateDir: state });
    const e = await expectAgentKeepError(
      core.addMemory({ store: remote, text: 'Never written.' }),
      'AuthFailed',
      /CHANGED/,
    );
    assert.ok(e.message.includes(newFp) && e.message.includes(oldFp), e.message);
    assert.match(e.hint ?? '', new RegExp(`ssh-keygen -R '\\[127\\.0\\.0\\.1\\]:${sshd.port}'`));
    assert.ok((await fs.readFile(mem())).equals(before));
    await fs.writeFile(sshd.knownHosts, `[127.0.0.1]:${sshd.port} ${sshd.hostKey}\n`); // accept the new key again
    assert.equal((await openStore(remote).list())[0].entries.length, 4);
  });
});
