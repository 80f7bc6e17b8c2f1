/**
 * The guest agent of a Proxmox VE VM through the API (a GuestAgentChannel, ./guestAgent.ts), for
 * store strings `<kind>:pve-agent://HOST[:PORT]/NODE/VMID/abs/path` (NODE may be `-`: the owning node
 * from /cluster/resources). It uses the Proxmox client of the proxmox backend
 * (sidecar/machine/proxmox/client.ts) as a library: same credentials (AGENTKEEP_PVE_TOKEN ...), TLS
 * pinning and no resending of POSTs.
 *
 * The endpoints and their limits (proxmox/qemu-server @ 17966d2, src/PVE/API2/Qemu/Agent.pm and
 * src/PVE/QemuServer/Agent.pm; all need VM.Monitor on /vms/VMID):
 *   - GET  .../agent/file-read {file} -> {content, bytes-read, truncated?}: guest-file-read in 1 MiB
 *     steps up to `$MAX_READ_SIZE = 16 * 1024 * 1024`; content is the bytes as a JSON string of code
 *     points 0-255 (read back with latin1). Past 16 MiB the rest is read with `dd` over exec, 8 MiB a
 *     call (exec output is capped at 16 MiB by qemu-ga).
 *   - POST .../agent/file-write {file, content (maxLength 60 * 1024 = 61440), encode (default 1)}:
 *     opens with mode 'wb' (truncates) and writes once. We send base64 ourselves (encode=0, binary
 *     safe), so one call carries at most 46080 bytes; a bigger file is written as part files that
 *     one exec joins (`cat`) and removes.
 *   - POST .../agent/exec {command[] (program + args), input-data? (maxLength 64 * 1024)} -> {pid};
 *     GET .../agent/exec-status {pid} -> {exited 0/1, exitcode?, signal?, out-data?, err-data?,
 *     out-truncated?, err-truncated?}, out-data/err-data decoded from base64 by Proxmox (latin1 again).
 *   - errors: HTTP 500 with the text in the reason phrase: "No QEMU guest agent configured", "VM 101 is
 *     not running", "QEMU guest agent is not running" (assert_agent_available), and the agent's own
 *     errors as "VM 101 qmp command 'guest-file-open' failed - <desc>" (PVE::QMPClient).
 */
import { AgentKeepError } from '../../core/errors';
import { PveClient, connectionFromEnv } from '../../machine/proxmox/client';
import { PveError } from '../../machine/proxmox/transport';
import type { ExecOptions, ExecResult } from './index';
import { execPollDelays, type GuestAgentChannel } from './guestAgent';
import { errnoOf } from './qga';

/** The most agent/file-read returns (qemu-server Agent.pm `$MAX_READ_SIZE`). */
export const PVE_FILE_READ_MAX = 16 * 1024 * 1024;
/** maxLength of agent/file-write `content` (qemu-server Agent.pm: 60 * 1024, "smaller than our 64k POST limit"). */
export const PVE_FILE_WRITE_MAX_CHARS = 60 * 1024;
/** Raw bytes per file-write call: base64 of 46080 bytes is exactly 61440 characters. */
export const PVE_FILE_WRITE_CHUNK = (PVE_FILE_WRITE_MAX_CHARS / 4) * 3;
/** maxLength of agent/exec `input-data`. */
export const PVE_EXEC_INPUT_MAX = 64 * 1024;
/** Bytes read per `dd` exec past the file-read limit. */
const DD_CHUNK_MIB = 8;

/** Where a store inside a Proxmox VM is: `pve-agent://HOST[:PORT]/NODE/VMID/abs/path`. */
export interface PveAgentLocation {
  host: string;
  port: number;
  /** The node, or `-` (the one /cluster/resources names). */
  node: string;
  vmid: number;
  /** Absolute path inside the guest. */
  path: string;
}

/** `pve-agent://host:port/node/vmid/path` (canonical: always with the port). */
export function pveAgentUrl(l: Omit<PveAgentLocation, 'path'>, p: string): string {
  const host = l.host.includes(':') ? `[${l.host}]` : l.host;
  return `pve-agent://${host}:${l.port}/${l.node}/${l.vmid}${p.split('/').map(encodeURIComponent).join('/')}`;
}

type AgentApi = Record<string, { $get(p: object): Promise<unknown>; $post(p: object): Promise<unknown> }>;

const bool = (v: unknown): boolean => v === true || v === 1 || v === '1';

/** The guest agent of one Proxmox VM (see the module doc). No I/O until the first call. */
export class PveAgentChannel implements GuestAgentChannel {
  readonly where: string;
  private clientP?: PveClient;

  constructor(
    readonly loc: Omit<PveAgentLocation, 'path'>,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.where = `the guest agent of VM ${loc.vmid} on ${loc.host}`;
  }

  display(abs: string): string {
    return pveAgentUrl(this.loc, abs);
  }

  private get client(): PveClient {
    this.clientP ??= new PveClient(connectionFromEnv(this.loc.host, this.loc.port, this.env));
    return this.clientP;
  }

  /** Close kept-alive connections. */
  close(): void {
    this.clientP?.close();
  }

  /**
   * Call `f` with the agent endpoints of the VM on its node, one call at a time: Proxmox opens the
   * VM's guest agent socket for each call and the agent serves one client at a time, so parallel
   * calls (a lock holder's polls beside the writes) would only queue there, until Proxmox's timeout
   * says "QEMU guest agent is not running". Agent-level failures become clear errors.
   */
  private agent<T>(step: string, abs: string | undefined, f: (a: AgentApi) => Promise<T>): Promise<T> {
    const run = (): Promise<T> => this.agentNow(step, abs, f);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private queue: Promise<unknown> = Promise.resolve();

  private async agentNow<T>(step: string, abs: string | undefined, f: (a: AgentApi) => Promise<T>): Promise<T> {
    const node = await this.client.ownerNode(this.loc.node, 'qemu', this.loc.vmid);
    const a = (this.client.api.nodes.$(node).qemu.$(this.loc.vmid) as unknown as { agent: AgentApi }).agent;
    try {
      return await f(a);
    } catch (e) {
      if (!(e instanceof PveError)) throw e;
      const r = e.reason;
      const vm = `VM ${this.loc.vmid} on ${this.loc.host}`;
      if (/No QEMU guest agent configured/i.test(r))
        throw new AgentKeepError(
          'Unsupported',
          `${vm} has no QEMU guest agent configured (Proxmox: "${r}"), so AgentKeep cannot reach its memory ` +
            'through the guest agent. Nothing was read or written.',
          'Enable it: VM > Options > QEMU Guest Agent (qm set VMID --agent enabled=1), install and start ' +
            'qemu-guest-agent in the guest (apt-get install qemu-guest-agent), then stop and start the VM. ' +
            'Or reach the store over SSH (hermes:ssh://root@GUEST/root/.hermes).',
        );
      if (/QEMU guest agent is not running/i.test(r))
        throw new AgentKeepError(
          'Unsupported',
          `The QEMU guest agent of ${vm} does not answer (Proxmox: "${r}"). Nothing was read or written.`,
          'Install and start qemu-guest-agent in the guest (apt-get install qemu-guest-agent; systemctl enable ' +
            '--now qemu-guest-agent); if it was just enabled in Proxmox, stop and start the VM once.',
        );
      if (/is not running/i.test(r) && !/qmp command/.test(r))
        throw new AgentKeepError(
          'StoreNotFound',
          `${vm} is not running (Proxmox: "${r}"), so its memory cannot be read through the guest agent.`,
          'Start the VM, then try again.',
        );
      if (e.status === 403)
        throw new AgentKeepError(
          'AuthFailed',
          `Proxmox denied the guest agent call ${step} on ${vm}: ${r}.`,
          'Grant the token VM.Monitor on /vms/VMID (the agent/file-read, file-write and exec endpoints need it).',
        );
      const m = /qmp command '([\w-]+)' failed - (.*)$/s.exec(r);
      if (m) {
        const shown = abs ? this.display(abs) : `VM ${this.loc.vmid}`;
        throw Object.assign(new Error(`${step} ${shown}: ${m[2]}`), { code: errnoOf(m[2]) });
      }
      throw e;
    }
  }

  async readFile(abs: string): Promise<Buffer> {
    const r = (await this.agent('read', abs, (a) => a['file-read'].$get({ file: abs }))) as {
      content?: string;
      truncated?: unknown;
    };
    const head = Buffer.from(r.content ?? '', 'latin1');
    if (!bool(r.truncated)) return head;
    // past the 16 MiB of one file-read: the rest with dd over exec, 8 MiB a call
    const parts: Buffer[] = [head];
    for (let skip = PVE_FILE_READ_MAX / (DD_CHUNK_MIB << 20); ; skip++) {
      const x = await this.exec([
        'dd',
        `if=${abs}`,
        `bs=${DD_CHUNK_MIB}M`,
        `skip=${skip}`,
        'count=1',
        'iflag=fullblock',
        'status=none',
      ]);
      if (x.code !== 0)
        throw Object.assign(
          new Error(`read ${this.display(abs)} past 16 MiB with dd: ${x.stderr.toString().trim() || `exit ${x.code}`}`),
          { code: 'EIO' },
        );
      parts.push(x.stdout);
      if (x.stdout.length < DD_CHUNK_MIB << 20) break;
    }
    return Buffer.concat(parts);
  }

  async writeFile(abs: string, data: Buffer): Promise<void> {
    const write = (file: string, b: Buffer): Promise<unknown> =>
      this.agent('write', abs, (a) => a['file-write'].$post({ file, content: b.toString('base64'), encode: false }));
    if (data.length <= PVE_FILE_WRITE_CHUNK) {
      await write(abs, data);
      return;
    }
    // one file-write truncates its file: the chunks go to part files, joined in one exec
    const parts: string[] = [];
    try {
      for (let pos = 0, i = 0; pos < data.length; pos += PVE_FILE_WRITE_CHUNK, i++) {
        const part = `${abs}.ak-part-${String(i).padStart(5, '0')}`;
        parts.push(part);
        await write(part, data.subarray(pos, pos + PVE_FILE_WRITE_CHUNK));
      }
      const r = await this.exec(['sh', '-c', 'out=$1; shift; cat -- "$@" > "$out"', 'sh', abs, ...parts]);
      if (r.code !== 0)
        throw Object.assign(
          new Error(`write ${this.display(abs)}: ${r.stderr.toString().trim() || `exit ${r.code}`}`),
          {
            code: errnoOf(r.stderr.toString()),
          },
        );
    } finally {
      if (parts.length) await this.exec(['rm', '-f', '--', ...parts]).catch(() => undefined);
    }
  }

  async exec(argv: readonly string[], opts: ExecOptions = {}, pollMaxMs = 100): Promise<ExecResult> {
    const vars = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const command = vars.length ? ['env', ...vars, ...argv] : [...argv];
    let input: string | undefined;
    if (opts.stdin) {
      const b = Buffer.from(opts.stdin);
      input = b.toString('utf8');
      if (!Buffer.from(input, 'utf8').equals(b) || b.length > PVE_EXEC_INPUT_MAX)
        throw new AgentKeepError(
          'FileError',
          `Cannot pass ${b.length} bytes of input to a command in VM ${this.loc.vmid}: Proxmox's agent/exec takes ` +
            `at most ${PVE_EXEC_INPUT_MAX} characters of text as input-data.`,
          'This is a bug in AgentKeep (it sends files with agent/file-write); please report it.',
        );
    }
    let pid: number;
    try {
      ({ pid } = (await this.agent('run', undefined, (a) =>
        a.exec.$post({ command, ...(input !== undefined ? { 'input-data': input } : {}) }),
      )) as { pid: number });
    } catch (e) {
      if (/Failed to execute child process/i.test((e as Error).message))
        return { code: 127, stdout: Buffer.alloc(0), stderr: Buffer.from((e as Error).message) };
      throw e;
    }
    const end = opts.timeoutMs ? Date.now() + opts.timeoutMs : Infinity;
    for (const d of execPollDelays(pollMaxMs)) {
      const st = (await this.agent('status', undefined, (a) => a['exec-status'].$get({ pid }))) as {
        exited: unknown;
        exitcode?: number;
        'out-data'?: string;
        'err-data'?: string;
      };
      if (bool(st.exited))
        return {
          code: st.exitcode ?? null,
          stdout: Buffer.from(st['out-data'] ?? '', 'latin1'),
          stderr: Buffer.from(st['err-data'] ?? '', 'latin1'),
        };
      if (Date.now() > end) return { code: null, stdout: Buffer.alloc(0), stderr: Buffer.from('timed out') };
      await new Promise((r) => setTimeout(r, Math.max(d, 20)));
    }
    throw new Error('unreachable');
  }
}
