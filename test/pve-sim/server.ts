/**
 * A contract simulator of the Proxmox VE snapshot API (HTTPS, in-process, 127.0.0.1:0), for tests
 * and the benchmark. Facts from ../shared/reference/proxmox-and-qemu.md:
 * - request validation generated from the API schema (schema.ts): 400 "Parameter verification
 *   failed." with the `errors` map; then permission checks (403 "Permission check failed (...)").
 * - guests modelled like the config file: lock, parent, snapshots {snapstate, snaptime, vmstate,
 *   description, parent}, running state, storage snapshot capability, template flag.
 * - pre-fork checks answer synchronously (500, text in the reason phrase: reserved names); the rest
 *   runs in a task (200 + UPID `UPID:node:pid:pstart:starttime:type:id:user:`) whose failure is only in
 *   `exitstatus`, with logs ending in `TASK ERROR: <text>` / `TASK WARNINGS: n` / `TASK OK`.
 * - wire: `application/json;charset=UTF-8`, `{"data": ...}`, 0/1 booleans, unsorted lists (shuffled
 *   on every call), error text in the HTTP reason phrase.
 * - fault knobs (`faults`): slow/hanging tasks, forced task failures, warnings, 596 with an empty body,
 *   connection dropped after the request was received (before or after acting), expired tickets.
 * - the guest agent endpoints of a qemu guest (agent/file-read, file-write, exec, exec-status), as
 *   qemu-server implements them (src/PVE/API2/Qemu/Agent.pm and src/PVE/QemuServer/Agent.pm @ 17966d2):
 *   VM.Monitor; "No QEMU guest agent configured" / "VM N is not running" / "QEMU guest agent is not
 *   running" (500); file-read reads 1 MiB guest-file-read steps up to 16 MiB and says `truncated`;
 *   file-write `content` maxLength 61440, `encode` default 1, opens with mode 'wb'; exec `command`
 *   array, `input-data` maxLength 65536; exec-status with out-data/err-data decoded from base64;
 *   an agent error reads "VM N qmp command 'guest-…' failed - <desc>". With `qga` set on a guest the
 *   calls go to a real guest agent on that socket (a fresh connection and guest-sync-delimited per
 *   request, as Proxmox does); without it file-read/file-write use the in-memory `files` map.
 * - a guest's disk can be a real local directory (`SimGuest.disk`): a snapshot copies it, a rollback
 *   puts the copy back, a delete drops it; `onPower` hears the guest stop and start (a test stops and
 *   starts the sshd that stands for the guest's SSH with it).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { X509Certificate, randomBytes } from 'node:crypto';
import { compileRoutes, loadSchema, matchRoute, requiredPrivs, validateParams, type Route } from './schema';
import { QgaClient, QgaCommandError, type QgaExecStatus } from '../../sidecar/memory/transport/qga';

/** A self-signed certificate made with openssl (key + cert PEM, SHA-256 fingerprint colon-hex). */
export interface SimCert {
  key: string;
  cert: string;
  fingerprint: string;
}

/** Generate a self-signed certificate for 127.0.0.1 with `openssl req -x509` (in a temp dir, removed after). */
export function makeCert(cn = 'pve-sim'): SimCert {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pve-sim-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const key = readFileSync(path.join(dir, 'key.pem'), 'utf8');
    const cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
    return { key, cert, fingerprint: new X509Certificate(cert).fingerprint256 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A snapshot section of a guest config. */
export interface SimSnapshot {
  description: string;
  snaptime: number;
  vmstate: boolean;
  parent?: string;
  snapstate?: 'prepare' | 'delete';
}

/** A guest as its config file holds it. */
export interface SimGuest {
  vmid: number;
  type: 'qemu' | 'lxc';
  node: string;
  name: string;
  tags: string[];
  running: boolean;
  lock?: string;
  parent?: string;
  template: boolean;
  /** Whether every volume's storage can snapshot (GET feature). */
  storageSnapshots: boolean;
  snapshots: Map<string, SimSnapshot>;
  /** qemu: guest agent running; files it can reach. */
  agent: boolean;
  /** qemu: the `agent` option is set in the VM config (default true); false: "No QEMU guest agent configured". */
  agentConfigured: boolean;
  files: Map<string, Buffer>;
  /** qemu: a real guest agent's socket (qemu-ga -m unix-listen, or a VM's virtio-serial chardev). */
  qga?: string;
  /**
   * A local directory standing for the guest's disk (optional): a snapshot copies it, a rollback
   * puts that copy back (as a storage rollback does), a delete removes the copy.
   */
  disk?: string;
}

/** A worker task. */
export interface SimTask {
  upid: string;
  node: string;
  type: string;
  id: string;
  user: string;
  starttime: number;
  status: 'running' | 'stopped';
  exitstatus?: string;
  endtime?: number;
  log: string[];
}

/** Fault knobs; each applies until cleared (or once, where named so). */
export interface SimFaults {
  /** Task run time in ms per task type (default: `taskMs`). */
  taskMsByType?: Record<string, number>;
  /** Default task run time in ms (default 30). Infinity = hangs. */
  taskMs?: number;
  /** The next task of this type fails with `text` (a worker error; snapshot state as Proxmox leaves it). */
  failTask?: { type: string; text: string; once?: boolean };
  /** Tasks of these types end with `WARNINGS: n` and `WARN: ...` log lines. */
  warnTask?: { type: string; lines: string[] };
  /** Answer the next matching request with HTTP 596 and an empty body; `act`: do the work first. */
  status596?: { method: string; match: RegExp; reason?: string; act: boolean };
  /** Drop the connection of the next matching request after it was received; `act`: do the work first. */
  drop?: { method: string; match: RegExp; act: boolean };
  /** Tickets issued before this instant answer 401 "permission denied - invalid PVE ticket". */
  ticketsValidAfter?: number;
  /** Refuse the token (401). */
  badToken?: boolean;
}

/** One request the simulator received. */
export interface SimRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Client port of the connection (tells connections apart). */
  remotePort?: number;
}

/** Options of a simulator. */
export interface SimOptions {
  /** Token id + secret accepted (`USER@REALM!TOKENID`, secret). */
  token?: { id: string; secret: string };
  /** User + password accepted for tickets. */
  user?: { name: string; password: string };
  /** Privileges of the token/user on every path (default: all the snapshot API needs). */
  privs?: string[];
  nodes?: string[];
  cert?: SimCert;
}

const ALL_PRIVS = ['VM.Audit', 'VM.Snapshot', 'VM.Snapshot.Rollback', 'VM.PowerMgmt', 'VM.Monitor', 'Sys.Audit'];
const JSON_CT = 'application/json;charset=UTF-8';

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/** Where the simulator keeps the copy of a guest's disk directory for snapshot `name` (beside it). */
function diskCopy(disk: string, name: string): string {
  return path.join(path.dirname(disk), `.${path.basename(disk)}.snap-${name}`);
}

class HttpReply extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly body?: unknown,
  ) {
    super(reason);
  }
}

/** The simulator. `start()` listens on 127.0.0.1:0; `url`/`port` after that. */
export class PveSim {
  readonly guests = new Map<number, SimGuest>();
  readonly tasks = new Map<string, SimTask>();
  readonly requests: SimRequest[] = [];
  faults: SimFaults = {};
  /** Called when a guest stops (rollback: hard stop) or starts (rollback with RAM state or start=1). */
  onPower?: (g: SimGuest, running: boolean) => void;
  privs: Set<string>;
  readonly cert: SimCert;
  readonly nodes: string[];
  /** Instants (ms) when tasks stopped, by UPID (for the benchmark). */
  readonly stoppedAt = new Map<string, number>();
  private readonly routes: Route[];
  private server?: https.Server;
  private pid = 4000;
  private readonly tickets = new Map<string, { user: string; csrf: string; issued: number }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  port = 0;

  constructor(readonly opts: SimOptions = {}) {
    this.routes = compileRoutes(loadSchema());
    this.privs = new Set(opts.privs ?? ALL_PRIVS);
    this.cert = opts.cert ?? makeCert();
    this.nodes = opts.nodes ?? ['pve1'];
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Add a guest (defaults: qemu, running, snapshot-capable storage, agent running). */
  addGuest(g: Partial<SimGuest> & { vmid: number }): SimGuest {
    const guest: SimGuest = {
      type: 'qemu',
      node: this.nodes[0],
      name: `guest${g.vmid}`,
      tags: [],
      running: true,
      template: false,
      storageSnapshots: true,
      snapshots: new Map(),
      agent: true,
      agentConfigured: true,
      files: new Map(),
      ...g,
    };
    this.guests.set(g.vmid, guest);
    return guest;
  }

  async start(): Promise<void> {
    this.server = https.createServer(
      { key: this.cert.key, cert: this.cert.cert },
      (req, res) => void this.handle(req, res),
    );
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Mutating requests received (POST/PUT/DELETE, except the ticket login). */
  mutations(): SimRequest[] {
    return this.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/access/ticket'));
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'https://x');
    const method = (req.method ?? 'GET').toUpperCase();
    const raw: Record<string, string> = {};
    const multi = new URLSearchParams(url.searchParams);
    for (const [k, v] of url.searchParams) raw[k] = v;
    if (method === 'POST' || method === 'PUT')
      for (const [k, v] of new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) {
        raw[k] = v;
        multi.append(k, v);
      }
    const p = url.pathname.replace(/^\/api2\/json/, '');
    this.requests.push({ method, path: p, params: raw, headers: req.headers, remotePort: req.socket.remotePort });

    const f = this.faults;
    const drop = f.drop && f.drop.method === method && f.drop.match.test(p) ? f.drop : undefined;
    const s596 = f.status596 && f.status596.method === method && f.status596.match.test(p) ? f.status596 : undefined;
    if (drop) f.drop = undefined;
    if (s596) f.status596 = undefined;
    if ((drop && !drop.act) || (s596 && !s596.act)) return this.fault(res, drop ? undefined : s596);

    let status = 200;
    let reason = 'OK';
    let body: unknown;
    try {
      body = { data: await this.dispatch(method, p, raw, req, multi) };
    } catch (e) {
      if (!(e instanceof HttpReply)) throw e;
      status = e.status;
      reason = e.reason;
      body = e.body ?? { data: null };
    }
    if (drop || s596) return this.fault(res, drop ? undefined : s596);
    const text = JSON.stringify(body);
    res.writeHead(status, reason.replace(/[\r\n]+/g, ' ').trim(), {
      'Content-Type': JSON_CT,
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  private fault(res: ServerResponse, s596?: { reason?: string }): void {
    if (s596) {
      // pveproxy's proxy hop failed: 596, reason phrase only, empty body, no content type.
      res.writeHead(596, s596.reason ?? 'Connection timed out', { 'Content-Length': 0 });
      res.end();
    } else res.socket?.destroy();
  }

  private async dispatch(
    method: string,
    p: string,
    raw: Record<string, string>,
    req: IncomingMessage,
    multi: URLSearchParams = new URLSearchParams(),
  ): Promise<unknown> {
    // The guest agent endpoints are not in the schema subset: handled before the router.
    // A path or method outside the API answers 501 "Method '... /api2/json/...' not implemented", the
    // exact status and text pveproxy gives for it (part of the contract the backend is tested against).
    const agent = /^\/nodes\/([^/]+)\/(qemu|lxc)\/(\d+)\/agent\/(file-read|file-write|exec|exec-status)$/.exec(p);
    const m = agent ? undefined : matchRoute(this.routes, p);
    if (!agent && !m) throw new HttpReply(501, `Method '${method} /api2/json${p}' not implemented`);
    const ms = m?.route.methods[method];
    if (m && !ms) throw new HttpReply(501, `Method '${method} /api2/json${p}' not implemented`);
    const all = { ...raw, ...(m?.vars ?? {}) };
    let params: Record<string, unknown> = all;
    if (ms) {
      const v = validateParams(ms, all);
      if (Object.keys(v.errors).length)
        throw new HttpReply(400, 'Parameter verification failed.', {
          data: null,
          errors: v.errors,
          message: 'Parameter verification failed.\n',
        });
      params = v.params;
    }
    if (p === '/access/ticket' && method === 'POST') return this.login(params);
    const user = this.authenticate(req, method);
    if (ms) {
      const need = requiredPrivs(ms);
      const has = need.any ? need.privs.some((x) => this.privs.has(x)) : need.privs.every((x) => this.privs.has(x));
      if (need.privs.length && !has)
        throw new HttpReply(403, `Permission check failed (/vms/${params.vmid ?? ''}, ${need.privs.join('|')})`);
    }
    if (agent) {
      // qemu-server Agent.pm: every file and exec endpoint checks VM.Monitor on /vms/{vmid}
      if (!this.privs.has('VM.Monitor'))
        throw new HttpReply(403, `Permission check failed (/vms/${agent[3]}, VM.Monitor)`);
      return this.agentCall(method, agent[1], agent[2] as 'qemu' | 'lxc', Number(agent[3]), agent[4], raw, multi);
    }
    return this.route(method, m!.route.template, params, user);
  }

  private login(params: Record<string, unknown>): unknown {
    const u = this.opts.user;
    const name = String(params.username ?? '');
    const full = name.includes('@') ? name : `${name}@${params.realm ?? 'pam'}`;
    if (!u || full !== u.name || params.password !== u.password) throw new HttpReply(401, 'authentication failure');
    const ticket = `PVE:${full}:${Math.floor(Date.now() / 1000)
      .toString(16)
      .toUpperCase()}::${randomBytes(24).toString('base64')}`;
    const csrf = `${Math.floor(Date.now() / 1000)
      .toString(16)
      .toUpperCase()}:${randomBytes(16).toString('base64').replace(/=+$/, '')}`;
    this.tickets.set(ticket, { user: full, csrf, issued: Date.now() });
    return { ticket, CSRFPreventionToken: csrf, username: full, cap: {} };
  }

  private authenticate(req: IncomingMessage, method: string): string {
    const auth = req.headers.authorization;
    if (auth) {
      const t = this.opts.token;
      const m = /^PVEAPIToken=([^=]+)=(.+)$/.exec(auth);
      if (!t || !m || m[1] !== t.id || m[2] !== t.secret || this.faults.badToken)
        throw new HttpReply(401, 'authentication failure');
      return t.id;
    }
    const cookie = /PVEAuthCookie=([^;]+)/.exec(req.headers.cookie ?? '');
    if (!cookie) throw new HttpReply(401, 'No ticket');
    const ticket = this.tickets.get(decodeURIComponent(cookie[1]));
    if (!ticket || (this.faults.ticketsValidAfter !== undefined && ticket.issued < this.faults.ticketsValidAfter))
      throw new HttpReply(401, 'permission denied - invalid PVE ticket');
    if (method !== 'GET' && req.headers.csrfpreventiontoken !== ticket.csrf)
      throw new HttpReply(401, 'Permission denied - invalid csrf token');
    return ticket.user;
  }

  // ---------------------------------------------------------------------------------------------
  // Handlers

  private guestOf(node: string, type: string, vmid: number): SimGuest {
    if (!this.nodes.includes(node))
      throw new HttpReply(
        500,
        `hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known`,
      );
    const g = this.guests.get(vmid);
    const dir = type === 'qemu' ? 'qemu-server' : 'lxc';
    if (!g || g.type !== type || g.node !== node)
      throw new HttpReply(500, `Configuration file 'nodes/${node}/${dir}/${vmid}.conf' does not exist`);
    return g;
  }

  private route(method: string, template: string, q: Record<string, unknown>, user: string): unknown {
    const key = `${method} ${template.replace('/qemu/', '/{type}/').replace('/lxc/', '/{type}/')}`;
    const type = template.includes('/lxc/') ? 'lxc' : 'qemu';
    const g = (): SimGuest => this.guestOf(String(q.node), type, Number(q.vmid));
    const T = type === 'qemu' ? 'VM' : 'CT';
    switch (key) {
      case 'GET /cluster/resources':
        return shuffle(
          [...this.guests.values()]
            .filter(() => !q.type || q.type === 'vm')
            .map((x) => ({
              id: `${x.type}/${x.vmid}`,
              type: x.type,
              vmid: x.vmid,
              node: x.node,
              name: x.name,
              status: x.running ? 'running' : 'stopped',
              template: x.template ? 1 : 0,
              ...(x.lock ? { lock: x.lock } : {}),
              ...(x.tags.length ? { tags: x.tags.join(';') } : {}),
              maxmem: 268435456,
              maxdisk: 8589934592,
            })),
        );
      case 'GET /nodes/{node}/{type}/{vmid}/status/current': {
        const x = g();
        return {
          vmid: x.vmid,
          name: x.name,
          status: x.running ? 'running' : 'stopped',
          ...(type === 'qemu' ? { qmpstatus: x.running ? 'running' : 'stopped' } : {}),
          ...(x.lock ? { lock: x.lock } : {}),
        };
      }
      case 'GET /nodes/{node}/{type}/{vmid}/config': {
        const x = g();
        return {
          name: x.name,
          digest: randomBytes(20).toString('hex'),
          ...(x.lock ? { lock: x.lock } : {}),
          ...(x.parent ? { parent: x.parent } : {}),
          ...(x.tags.length ? { tags: x.tags.join(';') } : {}),
          ...(x.template ? { template: 1 } : {}),
        };
      }
      case 'GET /nodes/{node}/{type}/{vmid}/feature': {
        const x = g();
        return { hasFeature: x.storageSnapshots && !x.template ? 1 : 0, nodes: [x.node] };
      }
      case 'GET /nodes/{node}/{type}/{vmid}/snapshot': {
        const x = g();
        const list: Record<string, unknown>[] = [...x.snapshots.entries()].map(([name, s]) => ({
          name,
          description: s.description,
          snaptime: s.snaptime,
          ...(type === 'qemu' ? { vmstate: s.vmstate ? 1 : 0 } : {}),
          ...(s.parent ? { parent: s.parent } : {}),
          ...(s.snapstate ? { snapstate: s.snapstate } : {}),
        }));
        list.push({
          name: 'current',
          description: 'You are here!',
          running: x.running ? 1 : 0,
          digest: randomBytes(20).toString('hex'),
          ...(x.parent ? { parent: x.parent } : {}),
        });
        return shuffle(list);
      }
      case 'POST /nodes/{node}/{type}/{vmid}/snapshot':
        return this.createSnapshot(g(), String(q.snapname), String(q.description ?? ''), !!q.vmstate, user);
      case 'GET /nodes/{node}/{type}/{vmid}/snapshot/{snapname}': {
        const x = g();
        if (!x.snapshots.has(String(q.snapname))) throw new HttpReply(500, `snapshot '${q.snapname}' does not exist`);
        return [{ cmd: 'rollback' }, { cmd: 'config' }];
      }
      case 'GET /nodes/{node}/{type}/{vmid}/snapshot/{snapname}/config': {
        const s = g().snapshots.get(String(q.snapname));
        if (!s) throw new HttpReply(500, `snapshot '${q.snapname}' does not exist`);
        return {
          description: s.description,
          snaptime: s.snaptime,
          ...(s.parent ? { parent: s.parent } : {}),
          ...(s.snapstate ? { snapstate: s.snapstate } : {}),
          ...(s.vmstate ? { vmstate: `local-lvm:vm-${q.vmid}-state-${q.snapname}` } : {}),
        };
      }
      case 'PUT /nodes/{node}/{type}/{vmid}/snapshot/{snapname}/config': {
        const x = g();
        if (x.lock) throw new HttpReply(500, `${T} is locked (${x.lock})`);
        const s = x.snapshots.get(String(q.snapname));
        if (!s) throw new HttpReply(500, `snapshot '${q.snapname}' does not exist`);
        if (q.description !== undefined) s.description = String(q.description);
        return null;
      }
      case 'POST /nodes/{node}/{type}/{vmid}/snapshot/{snapname}/rollback': {
        const x = g();
        if (q.start && !this.privs.has('VM.PowerMgmt'))
          throw new HttpReply(403, `Permission check failed (/vms/${x.vmid}, VM.PowerMgmt)`);
        return this.rollback(x, String(q.snapname), !!q.start, user);
      }
      case 'DELETE /nodes/{node}/{type}/{vmid}/snapshot/{snapname}':
        return this.deleteSnapshot(g(), String(q.snapname), !!q.force, user);
      case 'GET /nodes/{node}/tasks':
        return [...this.tasks.values()]
          .filter((t) => t.node === q.node && (q.vmid === undefined || t.id === String(q.vmid)))
          .filter((t) =>
            q.source === 'active' ? t.status === 'running' : q.source === 'all' ? true : t.status === 'stopped',
          )
          .sort((a, b) => b.starttime - a.starttime)
          .slice(Number(q.start ?? 0), Number(q.start ?? 0) + Number(q.limit ?? 50))
          .map((t) => ({
            upid: t.upid,
            node: t.node,
            type: t.type,
            id: t.id,
            user: t.user,
            starttime: t.starttime,
            pid: 0,
            pstart: 0,
            ...(t.status === 'stopped' ? { status: t.exitstatus, endtime: t.endtime } : {}),
          }));
      case 'GET /nodes/{node}/tasks/{upid}/status': {
        const t = this.task(String(q.upid));
        const [, node, pid, pstart, starttime, ttype, id, tuser] = t.upid.split(':');
        return {
          upid: t.upid,
          node,
          pid: parseInt(pid, 16),
          pstart: parseInt(pstart, 16),
          starttime: parseInt(starttime, 16),
          type: ttype,
          id,
          user: tuser,
          status: t.status,
          ...(t.status === 'stopped' ? { exitstatus: t.exitstatus } : {}),
        };
      }
      case 'GET /nodes/{node}/tasks/{upid}/log': {
        const t = this.task(String(q.upid));
        const start = Number(q.start ?? 0);
        return t.log.slice(start, start + Number(q.limit ?? 50)).map((line, i) => ({ n: start + i + 1, t: line }));
      }
      case 'DELETE /nodes/{node}/tasks/{upid}': {
        const t = this.task(String(q.upid));
        if (t.status === 'running') this.finishTask(t, 'unexpected status', ['received interrupt']);
        return null;
      }
      default:
        throw new HttpReply(501, `Method '${method} /api2/json${template}' not implemented in the simulator`);
    }
  }

  private task(upid: string): SimTask {
    const t = this.tasks.get(upid);
    if (!t) throw new HttpReply(500, `unable to parse worker upid '${upid}'`);
    return t;
  }

  /** Start a worker task; `run` is called when it ends (returns log lines, or throws the error text). */
  private startTask(
    g: SimGuest,
    type: string,
    user: string,
    prepare: () => void,
    run: () => string[],
    onError?: () => string[],
  ): string {
    const starttime = Math.floor(Date.now() / 1000);
    const hex = (n: number, w: number): string => n.toString(16).toUpperCase().padStart(w, '0');
    const pid = this.pid++;
    const upid = `UPID:${g.node}:${hex(pid, 8)}:${hex(100000 + pid, 8)}:${hex(starttime, 8)}:${type}:${g.vmid}:${user}:`;
    const t: SimTask = { upid, node: g.node, type, id: String(g.vmid), user, starttime, status: 'running', log: [] };
    this.tasks.set(upid, t);
    let failure: string | undefined;
    try {
      prepare();
    } catch (e) {
      failure = (e as Error).message;
    }
    const f = this.faults;
    const forced = !failure && f.failTask?.type === type ? f.failTask : undefined;
    if (forced?.once) f.failTask = undefined;
    const ms = failure ? 5 : (f.taskMsByType?.[type] ?? f.taskMs ?? 30);
    const end = (): void => {
      if (failure) return this.finishTask(t, failure, []);
      if (forced) return this.finishTask(t, forced.text, onError?.() ?? []);
      let lines: string[];
      try {
        lines = run();
      } catch (e) {
        return this.finishTask(t, (e as Error).message, []);
      }
      const warn = f.warnTask?.type === type ? f.warnTask.lines : [];
      this.finishTask(t, warn.length ? `WARNINGS: ${warn.length}` : 'OK', [...lines, ...warn.map((w) => `WARN: ${w}`)]);
    };
    if (Number.isFinite(ms)) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        end();
      }, ms);
      this.timers.add(timer);
    }
    return upid;
  }

  private finishTask(t: SimTask, exitstatus: string, lines: string[]): void {
    t.log.push(...lines);
    t.log.push(
      exitstatus === 'OK'
        ? 'TASK OK'
        : /^WARNINGS: /.test(exitstatus)
          ? `TASK ${exitstatus}`
          : `TASK ERROR: ${exitstatus}`,
    );
    t.status = 'stopped';
    t.exitstatus = exitstatus;
    t.endtime = Math.floor(Date.now() / 1000);
    this.stoppedAt.set(t.upid, performance.now());
  }

  private createSnapshot(g: SimGuest, name: string, description: string, vmstate: boolean, user: string): string {
    const T = g.type === 'qemu' ? 'VM' : 'CT';
    // Pre-fork (synchronous 500): reserved names.
    const reserved = name === 'current' || (g.type === 'qemu' ? name.toLowerCase() === 'pending' : name === 'vzdump');
    if (reserved) throw new HttpReply(500, `unable to use snapshot name '${name}' (reserved name)`);
    return this.startTask(
      g,
      g.type === 'qemu' ? 'qmsnapshot' : 'vzsnapshot',
      user,
      () => {
        if (g.lock) throw new Error(`${T} is locked (${g.lock})`);
        if (g.snapshots.has(name)) throw new Error(`snapshot name '${name}' already used`);
        if (g.template) throw new Error("you can't take a snapshot if it's a template");
        if (!g.storageSnapshots) throw new Error('snapshot feature is not available');
        g.lock = 'snapshot';
        g.snapshots.set(name, {
          description,
          snaptime: Math.floor(Date.now() / 1000),
          vmstate: vmstate && g.running,
          snapstate: 'prepare',
          ...(g.parent ? { parent: g.parent } : {}),
        });
      },
      () => {
        const s = g.snapshots.get(name)!;
        delete s.snapstate;
        g.lock = undefined;
        g.parent = name;
        if (g.disk) cpSync(g.disk, diskCopy(g.disk, name), { recursive: true });
        return vmstate && g.running
          ? [
              `saving VM state and RAM using storage 'local-lvm'`,
              'completed saving the VM state in 1s, saved 227.00 MiB',
            ]
          : [];
      },
      () => {
        // A create that fails after prepare cleans up (snapshot_delete with force).
        g.snapshots.delete(name);
        g.lock = undefined;
        return ['snapshot create failed: starting cleanup'];
      },
    );
  }

  private rollback(g: SimGuest, name: string, start: boolean, user: string): string {
    const T = g.type === 'qemu' ? 'VM' : 'CT';
    return this.startTask(
      g,
      g.type === 'qemu' ? 'qmrollback' : 'vzrollback',
      user,
      () => {
        const s = g.snapshots.get(name);
        if (!s) throw new Error(`snapshot '${name}' does not exist`);
        if (g.lock) throw new Error(`${T} is locked (${g.lock})`);
        if (s.snapstate) throw new Error(`unable to rollback to incomplete snapshot (snapstate = ${s.snapstate})`);
        const was = g.running;
        g.running = false; // a running guest is hard-stopped
        g.lock = 'rollback';
        if (was) this.onPower?.(g, false);
      },
      () => {
        const s = g.snapshots.get(name)!;
        g.lock = undefined;
        g.parent = name;
        if (g.disk) {
          for (const n of readdirSync(g.disk)) rmSync(path.join(g.disk, n), { recursive: true, force: true });
          cpSync(diskCopy(g.disk, name), g.disk, { recursive: true });
        }
        g.running = s.vmstate || start;
        if (g.running) this.onPower?.(g, true);
        return s.vmstate ? ['Resuming suspended VM', 'resume vm'] : start ? ['start VM'] : [];
      },
      () => {
        g.lock = undefined;
        return [];
      },
    );
  }

  private deleteSnapshot(g: SimGuest, name: string, force: boolean, user: string): string {
    const T = g.type === 'qemu' ? 'VM' : 'CT';
    return this.startTask(
      g,
      g.type === 'qemu' ? 'qmdelsnapshot' : 'vzdelsnapshot',
      user,
      () => {
        const s = g.snapshots.get(name);
        if (!s) throw new Error(`snapshot '${name}' does not exist`);
        if (g.lock && !force) throw new Error(`${T} is locked (${g.lock})`);
        g.lock = 'snapshot-delete';
        s.snapstate = 'delete';
      },
      () => {
        // relink children to the deleted snapshot's parent
        const s = g.snapshots.get(name)!;
        for (const o of g.snapshots.values()) if (o.parent === name) o.parent = s.parent;
        if (g.parent === name) g.parent = s.parent;
        g.snapshots.delete(name);
        if (g.disk) rmSync(diskCopy(g.disk, name), { recursive: true, force: true });
        g.lock = undefined;
        return [];
      },
      () => {
        if (force) {
          g.snapshots.delete(name);
          g.lock = undefined;
          return [];
        }
        // Without force a failure leaves lock snapshot-delete and snapstate delete (case 1).
        return [];
      },
    );
  }

  private async agentCall(
    method: string,
    node: string,
    type: 'qemu' | 'lxc',
    vmid: number,
    op: string,
    raw: Record<string, string>,
    multi: URLSearchParams,
  ): Promise<unknown> {
    const notImpl = (): HttpReply =>
      new HttpReply(501, `Method '${method} /api2/json/nodes/${node}/${type}/${vmid}/agent/${op}' not implemented`);
    if (type === 'lxc') throw notImpl();
    const want = op === 'file-write' || op === 'exec' ? 'POST' : 'GET';
    if (method !== want) throw notImpl();
    const g = this.guestOf(node, type, vmid);
    const errors: Record<string, string> = {};
    const missing = 'property is missing and it is not optional';
    const allowed: Record<string, string[]> = {
      'file-read': ['file'],
      'file-write': ['file', 'content', 'encode'],
      exec: ['command', 'input-data'],
      'exec-status': ['pid'],
    };
    for (const k of Object.keys(raw))
      if (!allowed[op].includes(k))
        errors[k] = 'property is not defined in schema and the schema does not allow additional properties';
    if ((op === 'file-read' || op === 'file-write') && raw.file === undefined) errors.file = missing;
    if (op === 'file-write' && raw.content === undefined) errors.content = missing;
    if (op === 'file-write' && (raw.content ?? '').length > 61440)
      errors.content = 'value may only be 61440 characters long';
    if (op === 'file-write' && raw.encode !== undefined && !['0', '1'].includes(raw.encode))
      errors.encode = `type check ('boolean') failed - got '${raw.encode}'`;
    if (op === 'exec' && !multi.getAll('command').length) errors.command = missing;
    if (op === 'exec' && (raw['input-data'] ?? '').length > 65536)
      errors['input-data'] = 'value may only be 65536 characters long';
    if (op === 'exec-status' && raw.pid === undefined) errors.pid = missing;
    if (op === 'exec-status' && raw.pid !== undefined && !/^-?\d+$/.test(raw.pid))
      errors.pid = `type check ('integer') failed - got '${raw.pid}'`;
    if (Object.keys(errors).length)
      throw new HttpReply(400, 'Parameter verification failed.', {
        data: null,
        errors,
        message: 'Parameter verification failed.\n',
      });
    // PVE::QemuServer::Agent::assert_agent_available
    if (!g.agentConfigured) throw new HttpReply(500, 'No QEMU guest agent configured');
    if (!g.running) throw new HttpReply(500, `VM ${vmid} is not running`);
    if (!g.agent) throw new HttpReply(500, 'QEMU guest agent is not running');
    if (g.qga) return this.qgaCall(g, op, raw, multi);
    if (op === 'exec' || op === 'exec-status')
      throw new HttpReply(500, `simulator: guest ${vmid} has no qga socket, so agent/${op} cannot run anything`);
    if (op === 'file-read') {
      const data = g.files.get(raw.file);
      if (!data)
        throw new HttpReply(
          500,
          `VM ${vmid} qmp command 'guest-file-open' failed - failed to open file '${raw.file}' (mode: 'r'): No such file or directory`,
        );
      const max = 16 * 1024 * 1024;
      return {
        content: data.subarray(0, max).toString('latin1'),
        'bytes-read': Math.min(max, data.length),
        ...(data.length > max ? { truncated: 1 } : {}),
      };
    }
    const enc = raw.encode === undefined || raw.encode === '1';
    g.files.set(raw.file, enc ? Buffer.from(raw.content, 'utf8') : Buffer.from(raw.content, 'base64'));
    return null;
  }

  /** The agent endpoints against a real guest agent, as qemu-server's handlers do them. */
  private async qgaCall(
    g: SimGuest,
    op: string,
    raw: Record<string, string>,
    multi: URLSearchParams,
  ): Promise<unknown> {
    const mon = async <T>(c: QgaClient, cmd: string, args: Record<string, unknown>): Promise<T> => {
      try {
        return await c.call<T>(cmd, args);
      } catch (e) {
        if (e instanceof QgaCommandError)
          throw new HttpReply(500, `VM ${g.vmid} qmp command '${cmd}' failed - ${e.desc}`);
        throw new HttpReply(500, `VM ${g.vmid} qmp command '${cmd}' failed - got timeout`);
      }
    };
    let c: QgaClient;
    try {
      c = await QgaClient.connect(g.qga!, 3000);
    } catch {
      throw new HttpReply(500, 'QEMU guest agent is not running');
    }
    try {
      if (op === 'file-read') {
        const h = await mon<number>(c, 'guest-file-open', { path: raw.file });
        const MAX = 16 * 1024 * 1024;
        let left = MAX;
        let eof = false;
        const parts: Buffer[] = [];
        while (left > 0 && !eof) {
          const r = await mon<{ count: number; 'buf-b64': string; eof: boolean }>(c, 'guest-file-read', {
            handle: h,
            count: 1024 * 1024,
          });
          parts.push(Buffer.from(r['buf-b64'], 'base64'));
          left -= r.count;
          eof = !!r.eof;
        }
        await c.call('guest-file-close', { handle: h }).catch(() => undefined);
        return {
          content: Buffer.concat(parts).toString('latin1'),
          'bytes-read': MAX - left,
          ...(!eof ? { truncated: 1 } : {}),
        };
      }
      if (op === 'file-write') {
        const enc = raw.encode === undefined || raw.encode === '1';
        const buf = enc ? Buffer.from(raw.content, 'utf8').toString('base64') : raw.content;
        const h = await mon<number>(c, 'guest-file-open', { path: raw.file, mode: 'wb' });
        await mon(c, 'guest-file-write', { handle: h, 'buf-b64': buf });
        await mon(c, 'guest-file-close', { handle: h });
        return null;
      }
      if (op === 'exec') {
        const cmd = multi.getAll('command');
        const input = raw['input-data'];
        return await mon(c, 'guest-exec', {
          'capture-output': true,
          path: cmd[0],
          arg: cmd.slice(1),
          ...(input !== undefined ? { 'input-data': Buffer.from(input, 'utf8').toString('base64') } : {}),
        });
      }
      const st = await mon<QgaExecStatus>(c, 'guest-exec-status', { pid: Number(raw.pid) });
      const out: Record<string, unknown> = { ...st };
      if (st['out-data']) out['out-data'] = Buffer.from(st['out-data'], 'base64').toString('latin1');
      if (st['err-data']) out['err-data'] = Buffer.from(st['err-data'], 'base64').toString('latin1');
      for (const [k, v] of Object.entries(out)) if (typeof v === 'boolean') out[k] = v ? 1 : 0;
      return out;
    } finally {
      c.close();
    }
  }
}
