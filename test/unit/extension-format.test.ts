/** Pure formatting helpers of the extension (extension/format.ts). */
import * as assert from 'node:assert/strict';
import { commandLine, describeLoss, describeMemoryLoss, displayLabel, entryTitle, formatAge, formatBytes, formatReason, samplePaths, shortReason, statusBarText, usageText } from '../../extension/format';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

describe('extension/format', () => {
  it('formats ages', () => {
    assert.equal(formatAge(ago(3), NOW), 'just now');
    assert.equal(formatAge(ago(42), NOW), '42s ago');
    assert.equal(formatAge(ago(5 * 60 + 10), NOW), '5m ago');
    assert.equal(formatAge(ago(3 * 3600), NOW), '3h ago');
    assert.equal(formatAge(ago(3 * 86400), NOW), '3d ago');
    assert.equal(formatAge(ago(-30), NOW), 'just now', 'clock skew');
    assert.equal(formatAge('not a date', NOW), '');
  });

  it('formats the status bar text', () => {
    assert.equal(statusBarText(undefined, NOW), '$(history) no restore point');
    assert.equal(statusBarText({ createdAt: ago(300) }, NOW), '$(history) 5m ago');
  });

  it('formats reasons, short reasons and pre-restore labels', () => {
    const rp = { label: 'npm install left-pad', kind: 'pre' as const, reason: { command: 'npm install left-pad', file: '/w/setup.sh', line: 3 } };
    assert.equal(formatReason(rp), '`npm install left-pad` from setup.sh:3');
    assert.equal(shortReason(rp), 'from setup.sh:3');
    assert.equal(shortReason({ ...rp, label: 'before upgrade' }), 'npm install left-pad from setup.sh:3');
    // with the risk engine's reason (Snapshot & run passes it as reason.risk): the details view shows it, the short form not
    const risky = { ...rp, label: 'before reset', reason: { ...rp.reason, command: 'git reset --hard', risk: 'destructive: git reset --hard discards uncommitted changes' } };
    assert.equal(formatReason(risky), '`git reset --hard` from setup.sh:3 — destructive: git reset --hard discards uncommitted changes');
    assert.equal(shortReason(risky), 'git reset --hard from setup.sh:3');
    assert.equal(formatReason({ kind: 'manual', reason: { text: 'before the upgrade' } }), 'before the upgrade');
    assert.equal(formatReason({ kind: 'pre-restore', restoredFrom: 'ak_1' }), 'before restoring ak_1');
    assert.equal(formatReason({ kind: 'manual' }), '');
    const labels = new Map([['ak_1', 'npm install left-pad']]);
    assert.equal(displayLabel({ id: 'ak_2', label: 'Before restoring ak_1', kind: 'pre-restore', restoredFrom: 'ak_1' }, labels), 'Before restoring "npm install left-pad"');
    assert.equal(displayLabel({ id: 'ak_2', label: 'my label', kind: 'pre-restore', restoredFrom: 'ak_1' }, labels), 'my label');
    assert.equal(displayLabel({ id: 'ak_3', label: '', kind: 'manual' }, labels), 'ak_3');
  });

  it('folds nested paths and says what a restore will lose, per scope', () => {
    const added = ['w/node_modules', 'w/node_modules/left-pad', 'w/node_modules/left-pad/index.js', 'w/package-lock.json'];
    assert.equal(samplePaths(added), 'w/node_modules/ (+2 inside), w/package-lock.json');
    assert.equal(samplePaths(['a', 'b', 'c', 'd', 'e'], 3), 'a, b, c and 2 more');
    const changes = { added, removed: ['w/old.txt'], changed: ['w/package.json'], agentChanged: ['hermes:memories/MEMORY.md'] };
    const both = describeLoss(changes, 'both');
    assert.match(both[0]!, /^4 new files and folders will be removed: w\/node_modules\/ \(\+2 inside\)/);
    assert.match(both[1]!, /^1 changed file will be reverted: w\/package.json/);
    assert.match(both[2]!, /^1 deleted file will come back/);
    assert.match(both[3]!, /MEMORY\.md/);
    assert.match(both.at(-1)!, /outside this machine \(emails sent, issues opened, payments\)/);
    const machine = describeLoss(changes, 'machine');
    assert.ok(!machine.some((l) => l.includes('MEMORY.md')), 'scope machine keeps memory');
    const agent = describeLoss(changes, 'agent');
    assert.ok(!agent.some((l) => l.includes('node_modules')), 'scope agent keeps machine files');
    assert.equal(describeLoss({ added: [], removed: [], changed: [], agentChanged: [] }, 'both')[0], 'Nothing changed since this restore point.');
  });

  it('says which memory entries a restore loses and which outside actions it cannot undo', () => {
    const store = 'hermes:/h';
    const e = (id: string, text: string) => ({ id, text });
    const r = {
      added: [{ store, after: e('a1', 'Staging moved to port 2222\nmore') }],
      removed: [],
      changed: [{ store, before: e('c0', 'old'), after: e('c1', 'User prefers tabs') }],
      actions: [{ action: 'none' as const, message: 'send_message to telegram: "deployed"', time: new Date(Date.now() - 3_600_000).toISOString() }],
    };
    const both = describeMemoryLoss(r, 'both');
    assert.equal(both[0], '2 memory entries learned since then will be lost:');
    assert.equal(both[1], '  • Staging moved to port 2222');
    assert.equal(both[2], '  • User prefers tabs');
    assert.equal(both[3], '1 action the agent took since then will NOT be undone:');
    assert.match(both[4]!, /send_message to telegram: "deployed" \(1h ago\)/);
    const machine = describeMemoryLoss(r, 'machine');
    assert.match(machine[0]!, /2 memory entries learned since then stay/);
    assert.deepEqual(describeMemoryLoss({ added: [], removed: [], changed: [] }, 'both'), []);
  });

  it('formats the disk use of a target against its size cap', () => {
    const cap = 10 * 1024 ** 3;
    assert.equal(usageText({ bytes: 12 * 1024 * 1024, capBytes: cap, level: 'ok' }), '12 MiB of 10 GiB');
    assert.equal(usageText({ bytes: 9.5 * 1024 ** 3, capBytes: cap, level: 'near' }), '9.5 GiB of 10 GiB (near the cap)');
    assert.equal(usageText({ bytes: 11 * 1024 ** 3, capBytes: cap, level: 'over' }), '11 GiB of 10 GiB (over the cap)');
  });

  it('formats bytes and entry titles', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(300 * 1024 * 1024), '300 MiB');
    assert.equal(entryTitle('\n  first line  \nsecond'), 'first line');
    assert.equal(entryTitle('x'.repeat(100), 10), `${'x'.repeat(9)}…`);
  });
  it('runs a CodeLens block of several commands as one && chain, a single command as it is', () => {
    assert.equal(commandLine('npm install --no-audit left-pad@1.3.0'), 'npm install --no-audit left-pad@1.3.0');
    assert.equal(commandLine('apt-get install -y jq\n  pip install requests\n'), 'apt-get install -y jq && pip install requests');
    assert.equal(commandLine('cd web || exit 1\nnpm ci'), 'cd web || exit 1 && npm ci');
  });
});
