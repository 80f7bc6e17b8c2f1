import * as assert from 'node:assert/strict';
import { displayPath, firstLine, formatAge, formatBytes, oneLine, truncate } from '../../sidecar/protocol/format';
import type { RestorePoint } from '../../sidecar/protocol';
import { restorePointTable, usageReport } from '../../sidecar/cli/format';
import { formatBytes as extensionBytes, formatAge as extensionAge, entryTitle } from '../../extension/format';
import { firstLine as webviewFirstLine } from '../../webview-ui/memory/logic';

const NOW = Date.parse('2026-03-12T09:15:00Z');
const ago = (seconds: number): string => new Date(NOW - seconds * 1000).toISOString();
const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe('sidecar/protocol/format (shared by the CLI, the extension and the webviews)', () => {
  it('labels sizes with binary units: B, KiB, MiB, GiB, TiB, PiB', () => {
    assert.equal(formatBytes(0), '0 B');
    assert.equal(formatBytes(1023), '1023 B');
    assert.equal(formatBytes(1024), '1.0 KiB');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(128 * KiB), '128 KiB');
    assert.equal(formatBytes(140_000), '137 KiB', '136.7 KiB: whole numbers from 10 on');
    assert.equal(formatBytes(12 * MiB), '12 MiB');
    assert.equal(formatBytes(3 * MiB), '3.0 MiB');
    assert.equal(formatBytes(9.5 * GiB), '9.5 GiB');
    assert.equal(formatBytes(10 * GiB), '10 GiB');
    assert.equal(formatBytes(2 * 1024 ** 4), '2.0 TiB');
    assert.equal(formatBytes(3 * 1024 ** 5), '3.0 PiB');
    assert.equal(formatBytes(2048 * 1024 ** 5), '2048 PiB', 'the largest unit grows past 1024');
  });

  it('never shows 1024 of a unit or "10.0": it moves to the next unit or drops the decimal', () => {
    assert.equal(formatBytes(MiB - 1), '1.0 MiB', '1023.999 KiB rounds to 1024 KiB');
    assert.equal(formatBytes(GiB - 100), '1.0 GiB');
    assert.equal(formatBytes(9.99 * MiB), '10 MiB');
    assert.equal(formatBytes(10 * MiB - 1), '10 MiB');
  });

  it('shows odd inputs as they are', () => {
    assert.equal(formatBytes(-5), '-5 B');
    assert.equal(formatBytes(Number.NaN), 'NaN B');
  });

  it('says how long ago a time was, in whole units rounded down', () => {
    assert.equal(formatAge(ago(0), NOW), 'just now');
    assert.equal(formatAge(ago(9.9), NOW), 'just now');
    assert.equal(formatAge(ago(10), NOW), '10s ago');
    assert.equal(formatAge(ago(59), NOW), '59s ago');
    assert.equal(formatAge(ago(60), NOW), '1m ago');
    assert.equal(formatAge(ago(5 * 60 + 59), NOW), '5m ago');
    assert.equal(formatAge(ago(3600), NOW), '1h ago');
    assert.equal(formatAge(ago(36 * 3600), NOW), '36h ago', 'hours up to 48');
    assert.equal(formatAge(ago(48 * 3600), NOW), '2d ago');
    assert.equal(formatAge(ago(50 * 3600), NOW), '2d ago');
    assert.equal(formatAge(ago(400 * 86400), NOW), '400d ago');
  });

  it('reads a future time (clock skew) as just now and an unparseable one as ""', () => {
    assert.equal(formatAge(ago(-3600), NOW), 'just now');
    assert.equal(formatAge('not a date', NOW), '');
    assert.equal(formatAge('', NOW), '');
  });

  it('cuts text to a length with an ellipsis, counting code points', () => {
    assert.equal(truncate('abcdef', 6), 'abcdef');
    assert.equal(truncate('abcdefg', 6), 'abcde…');
    assert.equal(truncate('😀😀😀', 2), '😀…', 'never splits a surrogate pair');
    assert.equal(truncate('abc', 0), '…');
  });

  it('takes the first non-blank line, trimmed and cut', () => {
    assert.equal(firstLine('\n  \n  Name: Sam Rivera.  \nWorks in UTC+1.'), 'Name: Sam Rivera.');
    assert.equal(firstLine('x'.repeat(200), 10), `${'x'.repeat(9)}…`);
    assert.equal(firstLine('x'.repeat(120)), 'x'.repeat(120), 'default 120 characters');
    assert.equal(firstLine('x'.repeat(121)), `${'x'.repeat(119)}…`);
    assert.equal(firstLine(''), '');
    assert.equal(firstLine(' \n\t\n'), '');
  });

  it('puts all of a text on one line', () => {
    assert.equal(oneLine('  send_message\n  to:\ttelegram  '), 'send_message to: telegram');
    assert.equal(oneLine('a\n'.repeat(100), 9), 'a a a a …');
  });

  it('is the formatter of every front end: CLI, extension and memory inspector say the same', () => {
    assert.equal(extensionBytes, formatBytes);
    assert.equal(extensionAge, formatAge);
    assert.equal(webviewFirstLine, firstLine);
    assert.equal(entryTitle('\n first \n second'), firstLine('\n first \n second'));
    const rp: RestorePoint = {
      id: 'ak_1',
      target: 'dir:/a',
      label: 'one',
      createdAt: ago(5 * 60),
      status: 'ready',
      kind: 'manual',
      machine: { backend: 'dir', files: 1, bytes: 3 * MiB, newBytes: 3 * MiB, durationMs: 1 },
      agent: [],
    };
    assert.match(restorePointTable([rp], 'dir:/a', NOW), /^ak_1 +5m ago +ready +manual +3\.0 MiB +one$/m);
    // list names why a Snapshot & run command was risky (reason.risk from the risk engine)
    const pre: RestorePoint = {
      ...rp,
      id: 'ak_2',
      kind: 'pre',
      label: 'git reset --hard',
      reason: { command: 'git reset --hard', risk: 'destructive: git reset --hard discards uncommitted changes' },
    };
    // a pre without its post says so (issue 15: the command or what wrapped it died); with its post, the pair
    assert.match(
      restorePointTable([pre], 'dir:/a', NOW),
      /^ak_2 .* pre without post: the command did not finish +3\.0 MiB +git reset --hard +git reset --hard \(destructive: git reset --hard discards uncommitted changes\)$/m,
    );
    const post: RestorePoint = { ...pre, id: 'ak_3', kind: 'post', pairOf: 'ak_2', createdAt: ago(60) };
    const both = restorePointTable([pre, post], 'dir:/a', NOW);
    assert.match(both, /^ak_2 .* pre, post ak_3 +3\.0 MiB/m);
    assert.match(both, /^ak_3 .* post of ak_2 +3\.0 MiB/m);
    const usage = usageReport({ target: 'dir:/a', bytes: 12 * MiB, capBytes: 10 * GiB, level: 'ok', points: [] });
    assert.equal(usage, 'Restore points of dir:/a use 12 MiB of the 10 GiB cap (0%).');
  });

  it('prints a path with a newline, a tab, a quote, an escape or edge spaces as one quoted C-escaped line', () => {
    assert.equal(displayPath('src/a b.txt'), 'src/a b.txt', 'plain names (spaces inside) as they are');
    assert.equal(displayPath('evil\nname'), '"evil\\nname"');
    assert.equal(displayPath('tab\tx'), '"tab\\tx"');
    assert.equal(displayPath('say "hi"'), '"say \\"hi\\""');
    assert.equal(displayPath('esc\x1b[31m'), '"esc\\x1b[31m"');
    assert.equal(displayPath(' lead'), '" lead"');
    assert.equal(displayPath('日本語.txt'), '日本語.txt');
    assert.equal(displayPath('back\\slash'), '"back\\\\slash"');
  });
});
