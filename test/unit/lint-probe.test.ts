/**
 * The stale-claim checks on another machine (sidecar/memory/lint/machine.ts transportProbe) never go
 * quiet: when the check script cannot run there (a login whose shell is nologin, a timeout, no way to
 * run commands) the probe's `limits` says so, and memory lint reports it as an info finding, instead
 * of "no stale finding" that reads as "all claims hold" (QA of issue 11). The transport here is a stub
 * answering only `exec` the way a real one does in each case (the real SSH path: memory-ssh.test.ts).
 */
import * as assert from 'node:assert/strict';
import { extractClaims } from '../../sidecar/memory/lint/claims';
import { gatherFacts, transportProbe } from '../../sidecar/memory/lint/machine';
import type { ExecResult, FileTransport } from '../../sidecar/memory/transport';

function stubTransport(exec: () => Promise<ExecResult>): FileTransport {
  return { where: 'nobody@127.0.0.1:22', user: 'nobody', remote: true, exec } as unknown as FileTransport;
}

const claims = extractClaims('The project uses pnpm 9 and lives in /srv/app; tests run with `pnpm test`.');

describe('memory lint on another machine: checks that could not run are said', () => {
  it('a login whose shell is nologin: no answer, the limit names the machine and the shell message', async () => {
    assert.ok(claims.length > 0, 'the text has claims to check');
    const probe = transportProbe(
      stubTransport(async () => ({
        code: 1,
        stdout: Buffer.from(''),
        stderr: Buffer.from('This account is currently not available.\n'),
      })),
      { home: '/home/nobody' },
    );
    const facts = await gatherFacts(claims, probe, { deadlineMs: 2000 });
    assert.deepEqual(facts.commands, {});
    assert.match(
      probe.limits ?? '',
      /^The stale-claim checks did not run on nobody@127\.0\.0\.1:22: the check script gave no answer \(exit 1: This account is currently not available\.\)\. No stale finding here/,
    );
  });

  it('a timeout and an exec that cannot start are said too; a probe that answered has no limit', async () => {
    const timedOut = transportProbe(
      stubTransport(async () => ({ code: null, stdout: Buffer.from(''), stderr: Buffer.from('') })),
      {
        home: '/root',
      },
    );
    await gatherFacts(claims, timedOut, { deadlineMs: 2000 });
    assert.match(timedOut.limits ?? '', /did not run on .*: the check timed out after \d+ s/);
    const cannot = transportProbe(
      stubTransport(async () => {
        throw new Error('SSH nobody@127.0.0.1:22: exec refused');
      }),
      { home: '/root' },
    );
    await gatherFacts(claims, cannot, { deadlineMs: 2000 });
    assert.match(cannot.limits ?? '', /commands cannot be run there \(SSH nobody@127\.0\.0\.1:22: exec refused\)/);
    const answered = transportProbe(
      stubTransport(async () => ({
        code: 0,
        stdout: Buffer.from('@0 /usr/bin/pnpm\n@0v 9.1.0\n'),
        stderr: Buffer.from(''),
      })),
      { home: '/root' },
    );
    await gatherFacts(claims, answered, { deadlineMs: 2000 });
    assert.equal(answered.limits, undefined);
  });
});
