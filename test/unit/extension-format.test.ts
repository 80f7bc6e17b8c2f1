/** Pure formatting helpers of the extension (extension/format.ts). */
import * as assert from 'node:assert/strict';
import {
  commandLine,
  describeGitRepos,
  describeLoss,
  describeMemoryLoss,
  describePreview,
  displayLabel,
  entryTitle,
  formatAge,
  formatBytes,
  formatReason,
  sampleText,
  shortReason,
  statusBarText,
  usageText,
} from '../../extension/format';
import { samplePaths } from '../../sidecar/core/preview';
import { PREVIEW_LIMIT } from '../../sidecar/protocol';

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
    const rp = {
      label: 'npm install left-pad',
      kind: 'pre' as const,
      reason: { command: 'npm install left-pad', file: '/w/setup.sh', line: 3 },
    };
    assert.equal(formatReason(rp), '`npm install left-pad` from setup.sh:3');
    assert.equal(shortReason(rp), 'from setup.sh:3');
    assert.equal(shortReason({ ...rp, label: 'before upgrade' }), 'npm install left-pad from setup.sh:3');
    // with the risk engine's reason (Snapshot & run passes it as reason.risk): the details view shows it, the short form not
    const risky = {
      ...rp,
      label: 'before reset',
      reason: {
        ...rp.reason,
        command: 'git reset --hard',
        risk: 'destructive: git reset --hard discards uncommitted changes',
      },
    };
    assert.equal(
      formatReason(risky),
      '`git reset --hard` from setup.sh:3 — destructive: git reset --hard discards uncommitted changes',
    );
    assert.equal(shortReason(risky), 'git reset --hard from setup.sh:3');
    assert.equal(formatReason({ kind: 'manual', reason: { text: 'before the upgrade' } }), 'before the upgrade');
    assert.equal(formatReason({ kind: 'pre-restore', restoredFrom: 'ak_1' }), 'before restoring ak_1');
    assert.equal(formatReason({ kind: 'manual' }), '');
    const labels = new Map([['ak_1', 'npm install left-pad']]);
    assert.equal(
      displayLabel({ id: 'ak_2', label: 'Before restoring ak_1', kind: 'pre-restore', restoredFrom: 'ak_1' }, labels),
      'Before restoring "npm install left-pad"',
    );
    assert.equal(
      displayLabel({ id: 'ak_2', label: 'my label', kind: 'pre-restore', restoredFrom: 'ak_1' }, labels),
      'my label',
    );
    assert.equal(displayLabel({ id: 'ak_3', label: '', kind: 'manual' }, labels), 'ak_3');
  });

  it('folds nested paths and says what a restore will lose, per scope', () => {
    // the lists come from restorePoint.preview: the sidecar folds and counts them (samplePaths), scoped
    const added = [
      'w/node_modules',
      'w/node_modules/left-pad',
      'w/node_modules/left-pad/index.js',
      'w/package-lock.json',
    ];
    const sample = (paths: string[]) => samplePaths(paths, PREVIEW_LIMIT);
    assert.equal(sampleText(sample(added)), 'w/node_modules/ (+2 inside), w/package-lock.json');
    assert.equal(sampleText(sample(['a', 'b', 'c', 'd', 'e']), 3), 'a, b, c and 2 more');
    const machine = { added: sample(added), removed: sample(['w/old.txt']), changed: sample(['w/package.json']) };
    const agentFiles = sample(['hermes:memories/MEMORY.md']);
    const both = describeLoss({ machine, agentFiles });
    assert.match(both[0]!, /^4 new files and folders will be removed: w\/node_modules\/ \(\+2 inside\)/);
    assert.match(both[1]!, /^1 changed file will be reverted: w\/package.json/);
    assert.match(both[2]!, /^1 deleted file will come back/);
    assert.match(both[3]!, /MEMORY\.md/);
    assert.match(both.at(-1)!, /outside this machine \(emails sent, issues opened, payments\)/);
    const machineOnly = describeLoss({ machine });
    assert.ok(!machineOnly.some((l) => l.includes('MEMORY.md')), 'scope machine keeps memory');
    const agent = describeLoss({ agentFiles });
    assert.ok(!agent.some((l) => l.includes('node_modules')), 'scope agent keeps machine files');
    const none = sample([]);
    assert.equal(
      describeLoss({ machine: { added: none, removed: none, changed: none }, agentFiles: none })[0],
      'Nothing changed since this restore point.',
    );
  });

  it('says which memory entries a restore loses and which outside actions it cannot undo', () => {
    const store = 'hermes:/h';
    const e = (id: string, text: string) => ({ id, text, store });
    const entries = (...items: Array<ReturnType<typeof e>>) => ({ count: items.length, items });
    // what restorePoint.preview says for an entry added and one changed since (scope both: both lost)
    const learned = entries(e('a1', 'Staging moved to port 2222\nmore'), e('c1', 'User prefers tabs'));
    const actions = {
      count: 1,
      items: [
        {
          action: 'none' as const,
          message: 'send_message to telegram: "deployed"',
          time: new Date(Date.now() - 3_600_000).toISOString(),
        },
      ],
    };
    const both = describeMemoryLoss({ memory: { lost: learned, broughtBack: entries(), kept: entries() }, actions });
    assert.equal(both[0], '2 memory entries learned since then will be lost:');
    assert.equal(both[1], '  • Staging moved to port 2222');
    assert.equal(both[2], '  • User prefers tabs');
    assert.equal(both[3], '1 action the agent took since then will NOT be undone:');
    assert.match(both[4]!, /send_message to telegram: "deployed" \(1h ago\)/);
    const machine = describeMemoryLoss({ memory: { lost: entries(), broughtBack: entries(), kept: learned }, actions });
    assert.match(machine[0]!, /2 memory entries learned since then stay/);
    const back = describeMemoryLoss({
      memory: { lost: entries(), broughtBack: entries(e('c0', 'old')), kept: entries() },
      actions: { count: 0, items: [] },
    });
    assert.deepEqual(back, ['1 memory entry removed or changed since then will come back:', '  • old']);
    assert.deepEqual(
      describeMemoryLoss({
        memory: { lost: entries(), broughtBack: entries(), kept: entries() },
        actions: { count: 0, items: [] },
      }),
      [],
    );
  });

  it('names git repositories whose HEAD a restore moves, and renders a whole preview', () => {
    const c = (n: string) => n.repeat(40);
    const repos = [
      {
        path: 'workspace/proj',
        effect: 'moved' as const,
        head: {
          current: { ref: 'refs/heads/main', commit: c('a') },
          restored: { ref: 'refs/heads/main', commit: c('b') },
        },
        branches: [
          { name: 'main', current: c('a'), restored: c('b') },
          { name: 'feature', current: c('a') },
        ],
      },
      {
        path: 'other',
        effect: 'removed' as const,
        head: { current: { ref: 'refs/heads/trunk', commit: c('c') } },
        branches: [],
      },
    ];
    assert.deepEqual(describeGitRepos(repos), [
      'Git repository workspace/proj: HEAD main aaaaaaa → main bbbbbbb ' +
        '(branches: main → bbbbbbb, feature deleted); commits made since leave it.',
      'Git repository other was made since then and will be deleted (HEAD trunk ccccccc).',
    ]);
    const none = samplePaths([], PREVIEW_LIMIT);
    const rp = {
      id: 'ak_1',
      target: 'dir:/a',
      label: 'x',
      createdAt: new Date().toISOString(),
      status: 'ready' as const,
      kind: 'manual' as const,
      machine: { backend: 'dir', files: 1, bytes: 1, newBytes: 1, durationMs: 1 },
      agent: [],
    };
    const lines = describePreview({
      restorePoint: rp,
      scope: 'machine',
      machine: {
        added: none,
        removed: none,
        changed: samplePaths(['workspace/proj/.git/refs/heads/main'], PREVIEW_LIMIT),
      },
      actions: { count: 0, items: [] },
      gitRepos: repos,
      warnings: ['w1'],
    });
    assert.match(lines[0]!, /^1 changed file will be reverted/);
    assert.match(lines[2]!, /^Git repository workspace\/proj: HEAD main aaaaaaa → main bbbbbbb/);
    assert.equal(lines.at(-1), 'Note: w1');
  });

  it('formats the disk use of a target against its size cap', () => {
    const cap = 10 * 1024 ** 3;
    assert.equal(usageText({ bytes: 12 * 1024 * 1024, capBytes: cap, level: 'ok' }), '12 MiB of 10 GiB');
    assert.equal(
      usageText({ bytes: 9.5 * 1024 ** 3, capBytes: cap, level: 'near' }),
      '9.5 GiB of 10 GiB (near the cap)',
    );
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
    assert.equal(
      commandLine('apt-get install -y jq\n  pip install requests\n'),
      'apt-get install -y jq && pip install requests',
    );
    assert.equal(commandLine('cd web || exit 1\nnpm ci'), 'cd web || exit 1 && npm ci');
  });
});
