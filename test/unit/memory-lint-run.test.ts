import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runLint } from '../../sidecar/memory/lint/run';
import { dirProbe, gatherFacts, localProbe, type MachineProbe } from '../../sidecar/memory/lint/machine';
import { extractClaims } from '../../sidecar/memory/lint/claims';
import { AgentKeepError } from '../../sidecar/core/errors';
import { FIXTURES } from './helpers/paths';

const FIXTURE = path.join(FIXTURES, 'memory', 'hermes');

describe('memory lint runner (real files, real processes)', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memlint-'));
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  async function home(memory: string, user?: string): Promise<string> {
    const h = path.join(tmp, 'hermes');
    await fs.mkdir(path.join(h, 'memories'), { recursive: true });
    await fs.copyFile(path.join(FIXTURE, 'config.yaml'), path.join(h, 'config.yaml'));
    await fs.chmod(path.join(h, 'config.yaml'), 0o644);
    await fs.writeFile(path.join(h, 'memories', 'MEMORY.md'), memory);
    if (user !== undefined) await fs.writeFile(path.join(h, 'memories', 'USER.md'), user);
    return h;
  }

  it('lints the fixture drift file of a Hermes home: drift found, the clean USER.md quiet', async () => {
    const drift = await fs.readFile(path.join(FIXTURE, 'memories', 'MEMORY.drift.md'), 'utf8');
    const h = await home(drift, await fs.readFile(path.join(FIXTURE, 'memories', 'USER.md'), 'utf8'));
    const { findings } = await runLint({ stores: [`hermes:${h}`] }, { probe: null });
    assert.deepEqual(
      findings.map((f) => f.kind),
      ['drift'],
    );
    assert.match(findings[0].message, /^MEMORY\.md has text that was probably added by hand/);
    assert.match(findings[0].evidence![0], /## Notes added by hand/);
  });

  it('finds a cross-file duplicate, a contradiction and over budget in a real home', async () => {
    const many = Array.from(
      { length: 40 },
      (_, i) => `Runbook ${i}: rotate logs of service s${i} on host h${i} and check its disks`,
    ).join('\n§\n');
    const h = await home(
      `User prefers tabs\n§\nUser prefers spaces\n§\nPrefers concise answers\n§\n${many}`,
      'Prefers concise answers\n§\nName: Dana',
    );
    const { findings } = await runLint({ stores: [`hermes:${h}`] }, { probe: null });
    const kinds = findings.map((f) => f.kind).sort();
    assert.deepEqual(kinds, ['contradiction', 'duplicate', 'over-budget']);
    assert.equal(findings[0].kind, 'over-budget', 'errors first');
    const dup = findings.find((f) => f.kind === 'duplicate')!;
    assert.match(dup.message, /MEMORY\.md, USER\.md/);
  });

  it('checks claims against a dir: target that holds a root filesystem', async () => {
    const root = path.join(tmp, 'root');
    await fs.mkdir(path.join(root, 'etc'), { recursive: true });
    await fs.mkdir(path.join(root, 'usr', 'bin'), { recursive: true });
    await fs.mkdir(path.join(root, 'srv', 'app'), { recursive: true });
    await fs.writeFile(path.join(root, 'etc', 'os-release'), 'ID=debian\nVERSION_ID="12"\n');
    await fs.writeFile(path.join(root, 'usr', 'bin', 'pnpm'), '#!/bin/sh\n');
    const h = await home(
      'App lives in /srv/app\n§\nNginx config is /etc/nginx/app.conf\n§\nRun tests with `pnpm test`\n§\nFormat with `black .`\n§\nThis box runs Debian 11',
    );
    const { findings } = await runLint({ stores: [`hermes:${h}`], target: `dir:${root}` });
    const stale = findings.filter((f) => f.kind === 'stale');
    assert.equal(stale.length, 3, JSON.stringify(stale, null, 1));
    const text = stale.map((f) => f.message).join('\n');
    assert.match(text, /\/etc\/nginx\/app\.conf does not exist on dir:/);
    assert.match(text, /command "black"/);
    assert.match(text, /runs debian 12/);
  });

  it('probes the local machine for real: node is on PATH at this version, a made-up tool is not', async () => {
    // PATH = the directory of the node running this test, so "node" is this very binary.
    const probe = localProbe({ env: { PATH: path.dirname(process.execPath) } });
    const claims = extractClaims(
      `Runs Node ${process.versions.node.split('.')[0]}; uses \`agentkeep-no-such-tool-x\`; key in ${tmp}/nope`,
    );
    const facts = await gatherFacts(claims, probe, { deadlineMs: 5000 });
    assert.equal(facts.commands!.node.found, true);
    assert.equal(facts.commands!.node.version, process.versions.node);
    assert.equal(facts.commands!['agentkeep-no-such-tool-x'].found, false);
    assert.equal(facts.paths![`${tmp}/nope`].exists, false);
  });

  it('a plain directory target checks only paths inside it', async () => {
    const probe = await dirProbe(tmp, `dir:${tmp}`);
    assert.equal(await probe.path('/etc/passwd'), undefined);
    assert.deepEqual(await probe.path(`${tmp}/x`), { exists: false, checked: `${tmp}/x` });
    assert.equal(await probe.command('node', true), undefined);
  });

  it('uses an injected probe, and stops probing at the deadline', async () => {
    let calls = 0;
    const slow: MachineProbe = {
      where: 'fake',
      path: async () => {
        calls++;
        await new Promise((r) => setTimeout(r, 60));
        return { exists: false, checked: 'x' };
      },
      command: async () => undefined,
      os: async () => undefined,
    };
    const claims = Array.from({ length: 40 }, (_, i) => extractClaims(`file /data/f${i}`)[0]);
    const facts = await gatherFacts(claims, slow, { deadlineMs: 100, concurrency: 2 });
    assert.ok(calls < 40 && calls >= 2, `${calls} calls`);
    assert.equal(Object.keys(facts.paths!).length, calls);
  });

  async function fixtureCopies(): Promise<{ h: string; a0: string }> {
    const h = path.join(tmp, 'agent', '.hermes');
    const a0 = path.join(tmp, 'a0');
    await fs.cp(FIXTURE, h, { recursive: true });
    await fs.cp(path.join(FIXTURES, 'memory', 'agent-zero'), a0, { recursive: true });
    return { h, a0 };
  }

  it('finds the near-duplicates of the Hermes and Agent Zero fixtures across stores (QA issue 4.2, 4.3)', async () => {
    const { h, a0 } = await fixtureCopies();
    const { findings } = await runLint(
      { stores: [`hermes:${h}`, `agent-zero:${a0}`] },
      { probe: null, now: Date.parse('2026-01-10T00:00:00Z') },
    );
    const near = findings.filter((f) => f.kind === 'near-duplicate');
    const texts = near.map((f) => f.evidence!.join('\n'));
    assert.ok(
      texts.some(
        (t) =>
          /SSH on port 2222, key/.test(t) && /User's staging server listens for SSH on port 2222 \(not 22\)/.test(t),
      ),
      texts.join('\n---\n'),
    );
    assert.ok(
      texts.some(
        (t) =>
          /Prefers concise answers with code first/.test(t) &&
          /User prefers concise answers and TypeScript examples/.test(t),
      ),
      texts.join('\n---\n'),
    );
    for (const f of near) assert.equal(f.stores?.length, 2);
    // Skills are never traced, so they are not untraceable.
    const untraced = findings.filter((f) => f.kind === 'untraceable');
    assert.ok(untraced.length > 0);
    assert.ok(
      untraced.every((f) => !/skills/.test(f.message)),
      untraced.map((f) => f.message).join('\n'),
    );
  });

  it('says when stale claims were not checked, and refuses a dir: target that does not exist (QA issue 4.4)', async () => {
    const { h } = await fixtureCopies();
    const px = await runLint({ stores: [`hermes:${h}`], target: 'proxmox://pve.example/pve1/qemu/101' }, { now: 0 });
    const note = px.findings.find((f) => f.kind === 'store' && f.severity === 'info');
    assert.ok(note, 'no note about the proxmox target');
    assert.match(
      note.message,
      /^Stale claims were not checked: proxmox:\/\/pve.example\/pve1\/qemu\/101 is a proxmox target/,
    );
    await assert.rejects(
      runLint({ stores: [`hermes:${h}`], target: `dir:${tmp}/nonexistent` }),
      (e: unknown) =>
        e instanceof AgentKeepError &&
        e.kind === 'BadTarget' &&
        /does not exist/.test(e.message) &&
        /--target dir:/.test(e.hint ?? ''),
    );
    const plain = await fs.mkdtemp(path.join(tmp, 'plain-'));
    const d = await runLint({ stores: [`hermes:${h}`], target: `dir:${plain}` }, { now: 0 });
    assert.ok(d.findings.some((f) => f.kind === 'store' && /not a root filesystem/.test(f.message)));
    assert.equal(d.findings.filter((f) => f.kind === 'stale').length, 0);
  });

  it('resolves ~ against the agent home of a Hermes store, and skips ~ paths when it is unknown (QA issue 4.7)', async () => {
    const { h } = await fixtureCopies();
    const agent = path.dirname(h);
    await fs.mkdir(path.join(agent, 'workspace'), { recursive: true });
    await fs.writeFile(
      path.join(h, 'memories', 'MEMORY.md'),
      'Work happens in ~/workspace\n§\nNotes are in ~/no-such-notes-dir',
    );
    const f = (await runLint({ stores: [`hermes:${h}`] }, { now: 0 })).findings.filter((x) => x.kind === 'stale');
    assert.equal(f.length, 1, f.map((x) => x.message).join('\n'));
    assert.ok(
      f[0].evidence!.some((e) => e.includes(`checked ${path.join(agent, 'no-such-notes-dir')}`)),
      f[0].evidence!.join('\n'),
    );
    // A Hermes store whose path does not end in .hermes: the home is unknown, ~ paths are not judged.
    const other = path.join(tmp, 'hermes-elsewhere');
    await fs.rename(h, other);
    const g = await runLint({ stores: [`hermes:${other}`] }, { now: 0 });
    assert.equal(g.findings.filter((x) => x.kind === 'stale').length, 0);
    assert.ok(g.findings.some((x) => x.kind === 'store' && /"~\/\.\.\." paths were not checked/.test(x.message)));
  });

  it('refuses no store and a bad store with a hint', async () => {
    await assert.rejects(
      runLint({ stores: [] }),
      (e: unknown) => e instanceof AgentKeepError && e.kind === 'InvalidParams' && !!e.hint,
    );
    await assert.rejects(
      runLint({ stores: ['nope'] }),
      (e: unknown) => e instanceof AgentKeepError && e.kind === 'BadStore',
    );
  });
});
