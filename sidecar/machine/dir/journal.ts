/**
 * The change journal of the `dir` backend (issue 14): in a long-running process (the sidecar's
 * `serve`, or a `Core` created with `changeJournal: true`) a create after a small change does not
 * lstat every path of the target, it re-reads only what inotify reported as changed since the last
 * scan this process made, and takes everything else from that scan's manifest as is.
 *
 * How: one `worker_threads` Worker per target (its own libuv loop, so its own inotify fd, reading
 * continuously while the main thread hashes and writes) holds one non-recursive `fs.watch` per
 * directory of the target (libuv inotify: IN_ATTRIB, IN_CREATE, IN_MODIFY, IN_DELETE, IN_DELETE_SELF,
 * IN_MOVE_SELF, IN_MOVED_FROM, IN_MOVED_TO). Per event in directory `d` on name `n` it records:
 * - `paths`: `d/n` (modified, attributes changed, created, removed or renamed), and for a `rename`
 *   event also `d` itself (its mtime changed);
 * - `dirs`: `d`, for a `rename` event (its listing changed: re-read it);
 * - `trees`: when a `rename` event leaves a directory at `d/n` (created, moved in or back; also a
 *   chmod of a directory, which inotify flags IN_ATTRIB|IN_ISDIR and libuv reports as a rename), the
 *   worker walks its subtree and watches every directory not yet watched at its path with its inode
 *   (watch first, then list, so nothing created in between is missed); each of those is a tree the
 *   next scan reads whole (files created right after the mkdir, before the watch existed, are found
 *   by the listing; a directory moved back has its events of meanwhile under the other path).
 * Watchers are never closed while the worker lives (an event of a closed watcher's wd would be
 * skipped unseen by libuv, see below, and not counted); a directory moved elsewhere keeps its old
 * watcher, which then reports its events under the old path too: spurious paths cost one lstat.
 *
 * Lost events. The kernel drops events when an inotify instance has max_queued_events
 * (/proc/sys/fs/inotify/max_queued_events, default 16384) events queued and queues IN_Q_OVERFLOW
 * (wd -1) instead; libuv drops that silently (src/unix/linux.c, uv__inotify_read: `w =
 * find_watcher(loop, e->wd); if (w == NULL) continue; /\* Stale event, no watchers left. *\/`), so
 * Node never sees an overflow. The journal uses this bound instead: an overflow needs
 * max_queued_events events queued at once, all of which are then read (the overflow event comes
 * after them), and since no watcher is ever closed every one of them reaches a JS callback and is
 * counted. Epochs are separated by barrier events (below), and a barrier is written only after the
 * previous one was read; so the events queued when an event of epoch k is dropped were all read
 * after the barrier opening epoch k-1, and count(k-1) + count(k) >= max_queued_events - 1. The
 * journal trusts epoch k only when count(k-1) + count(k) < max_queued_events / 2 (the factor 2 is
 * margin; an event delivered to two watchers of one wd counts twice, which only makes the bound
 * stricter). Above it, or on any watcher error (ENOSPC: fs.inotify.max_user_watches reached,
 * EMFILE, a watcher 'error' event, the worker exiting), the journal is invalid: the next create does
 * the full walk and says why (DirBackend.lastScan), and a new worker and epoch begin.
 *
 * Barrier. Before a create reads the journal, every event of a change made before the call must
 * have been read: the main thread creates a file `b-<n>` in a directory the same worker watches,
 * outside the target (`<stateDir>/locks/<targetKey>.barrier/`), and waits until the worker reports
 * that event (one inotify fd, one FIFO queue: every earlier event was read before it). The worker
 * then hands over what it recorded and starts the next epoch. No report within 2 s: full walk (and
 * after 3 in a row the journal stays off in this process, as it does when the target or the state
 * dir is on a file system inotify does not fully cover, fs.inotify.max_user_watches is reached, or
 * no inotify instance is left: EMFILE, fs.inotify.max_user_instances, one per watched target).
 *
 * Epoch. What the journal holds is relative to the last scan this process did through it (its
 * `base`, set by `commit` after that create succeeded; the epoch began at that create's barrier,
 * before its scan started, so changes during the scan are in the next epoch). A create whose parent
 * is not the base (another process's restore point, a failed create, a restarted worker) does the
 * full walk.
 *
 * Limits (the journal is not used, or does not help): changes through a shared writable mmap and
 * changes made on another host (network file systems) raise no inotify event, so the journal is
 * used only on local file systems (statfs: ext2/3/4, xfs, btrfs, tmpfs, f2fs; a directory of the
 * target on another file system of another type invalidates it); a write through a hard link
 * outside the target raises no event in the target, so files with more than one link are always
 * lstat'd (scan.ts); a one-shot CLI process has no journal (full walk, as before).
 * AGENTKEEP_DIR_JOURNAL=0 turns it off everywhere.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { envSwitch } from '../../core/envWarn';
import { pidAlive } from '../../core/pid';

/** What changed since the journal's base: target-relative POSIX paths ('' = the root). */
export interface Changed {
  /** Directories whose listing may have changed (re-read them). */
  dirs: Set<string>;
  /** Paths whose own stat may have changed (lstat them). */
  paths: Set<string>;
  /** Directories whose whole subtree must be read afresh (new, moved in or back). */
  trees: Set<string>;
  /**
   * Files with more than one hard link at the base's scan (lstat'd every time). A file found with a
   * second link that is not among them makes the scan start again as a full walk (ScanResult.newLink):
   * link(2) raises no event on the directories of the file's other names.
   */
  linked?: Set<string>;
}

/** statfs f_type of the local file systems inotify fully covers. */
const LOCAL_FS = new Set([
  0xef53, // ext2/3/4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0xf2f52010, // f2fs
]);

/** Tuning (tests inject smaller values). */
export const journalTuning = {
  /** Events per two epochs at or above which the journal is not trusted; default max_queued_events / 2. */
  maxEvents: 0,
  /** How long a barrier may take (ms). */
  barrierTimeoutMs: 2000,
  /** How long the worker may take to watch the whole tree (ms). */
  readyTimeoutMs: 120_000,
  /**
   * A full walk at least every this many journal creates, and every fullWalkMs: it bounds how long a
   * change inotify cannot see (a write through a hard link made from outside the target, a shared
   * writable mmap) can stay out of the restore points.
   */
  fullWalkCreates: 20,
  fullWalkMs: 5 * 60_000,
};

/**
 * max_queued_events / 2 (the count bound of the docstring); 8192 when /proc does not say. Read when a
 * worker starts (ChangeJournal.start): the kernel fixes an inotify instance's queue length when the
 * instance is made, so a later sysctl change does not apply to the running worker's.
 */
function procMaxEvents(): number {
  try {
    const q = Number(fs.readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
    if (q > 0) return Math.floor(q / 2);
  } catch {
    /* not Linux or no /proc */
  }
  return 8192;
}

const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { root, barrierDir, localFs } = workerData;
const LOCAL = new Set(localFs);
let dirs = new Set(), paths = new Set(), trees = new Set(), count = 0, error, lastBarrier = '';
const watched = new Map(); // rel -> inode of the directory watched at that path
let rootSt, started = false, rewatches = 0;
const base = (rel) => rel.slice(rel.lastIndexOf('/') + 1);
const parentOf = (rel) => (rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '');
function fail(reason) {
  if (error) return;
  error = reason;
  parentPort.postMessage({ type: 'invalid', reason });
}
function onEvent(rel, type, name) {
  count++;
  if (error) return;
  if (name == null) { trees.add(rel); dirs.add(rel); paths.add(rel); return; }
  name = String(name);
  const p = rel ? rel + '/' + name : name;
  paths.add(p);
  if (type === 'rename') {
    dirs.add(rel);
    if (rel) paths.add(rel);
    // A name added, removed or renamed here: if a directory was watched at that path, its watch may be
    // dead (deleted) or follow the inode elsewhere (moved), and libuv names a watch's own events by the
    // first path it was made for, so the child cannot be trusted to report its own deletion: forget it
    // and everything below, and watch (and read whole) what is there now.
    if (forget(p) && ++rewatches > 2000) { fail('directories were watched again 2000 times (each repeat multiplies the event count)'); return; }
    let st;
    try { st = fs.lstatSync(root + '/' + p, { throwIfNoEntry: false }); } catch {}
    if (st && st.isDirectory()) { trees.add(p); watchTree(p); }
  }
  if (rel === '' ? name === base(root) : name === base(rel)) {
    // maybe an event on the watched directory itself (deleted, moved, chmod)
    if (rel === '') {
      let st;
      try { st = fs.statSync(root); } catch {}
      if (!st || st.ino !== rootSt.ino || st.dev !== rootSt.dev) fail('the target directory was moved or replaced');
    } else {
      paths.add(rel); dirs.add(rel); dirs.add(parentOf(rel));
      // The directory itself was deleted, moved or changed: the kernel drops the watch of a deleted
      // directory, and a directory made again at this path may get the same inode number, so "known
      // by its inode" is no proof of a live watch. Forget it and everything below, watch it again
      // (a second watch of a live one only repeats its events) and read its subtree whole.
      if (forget(rel) && ++rewatches > 2000) { fail('directories were watched again 2000 times (each repeat multiplies the event count)'); return; }
      trees.add(rel);
      watchTree(rel);
    }
  }
}
/** Forget the watches at \`rel\` and below (kept open: a second watch of a live one only repeats events). */
function forget(rel) {
  let any = false;
  for (const k of [...watched.keys()]) if (k === rel || k.startsWith(rel + '/')) { watched.delete(k); any = true; }
  return any;
}
function watchOne(rel, st) {
  if (watched.get(rel) === st.ino) return 'known';
  if (st.dev !== rootSt.dev) {
    let t;
    try { t = fs.statfsSync(rel ? root + '/' + rel : root).type; } catch (e) { fail('statfs ' + rel + ': ' + (e.code || e.message)); return false; }
    if (!LOCAL.has(t)) { fail('a file system inotify does not fully cover (type 0x' + t.toString(16) + ') is mounted at ' + rel); return false; }
  }
  let w;
  try {
    w = fs.watch(rel ? root + '/' + rel : root, { persistent: true }, (type, name) => onEvent(rel, type, name));
  } catch (e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return false; // gone again: its parent's event covers it
    fail('cannot watch ' + (rel || '/') + ': ' + (e.code === 'ENOSPC' ? 'fs.inotify.max_user_watches reached' : e.code || e.message));
    return false;
  }
  w.on('error', (e) => fail('watcher of ' + (rel || '/') + ': ' + (e.code || e.message)));
  watched.set(rel, st.ino);
  return 'new';
}
function watchTree(top) {
  const stack = [top];
  while (stack.length && !error) {
    const rel = stack.pop();
    const abs = rel ? root + '/' + rel : root;
    let st;
    try { st = fs.lstatSync(abs, { throwIfNoEntry: false }); } catch {}
    if (!st || !st.isDirectory()) continue;
    const how = watchOne(rel, st);
    if (!how) continue;
    if (how === 'new' && started) trees.add(rel); // not watched at this path before: read it whole
    let ents;
    try { ents = fs.readdirSync(abs, { withFileTypes: true }); } catch (e) {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') continue;
      fail('cannot list ' + (rel || '/') + ': ' + (e.code || e.message));
      return;
    }
    for (const d of ents) if (d.isDirectory()) stack.push(rel ? rel + '/' + d.name : d.name);
  }
}
try {
  rootSt = fs.statSync(root);
  fs.watch(barrierDir, { persistent: true }, (type, name) => {
    count++;
    name = name == null ? '' : String(name);
    if (!name.startsWith('b-') || name === lastBarrier) return;
    lastBarrier = name;
    parentPort.postMessage({ type: 'epoch', name, count, error, dirs: [...dirs], paths: [...paths], trees: [...trees] });
    dirs = new Set(); paths = new Set(); trees = new Set(); count = 0;
  }).on('error', (e) => fail('barrier watcher: ' + (e.code || e.message)));
  const t = fs.statfsSync(root).type;
  if (!LOCAL.has(t)) fail('the target is on a file system inotify does not fully cover (type 0x' + t.toString(16) + ')');
  else watchTree('');
  started = true;
} catch (e) {
  fail('cannot start: ' + (e.code || e.message));
}
parentPort.postMessage({ type: 'ready', error, watched: watched.size, ino: rootSt && rootSt.ino, dev: rootSt && rootSt.dev });
`;

interface EpochMsg {
  type: 'epoch';
  name: string;
  count: number;
  error?: string;
  dirs: string[];
  paths: string[];
  trees: string[];
}

/** What take() hands a create: the changes since the base, or why the full walk is needed. */
export type Take = { changed: Changed; note: string } | { changed?: undefined; note: string };

/** The change journal of one target in this process (see the file's docstring). */
export class ChangeJournal {
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private broken: string | undefined;
  /** Why the journal is off for the rest of this process (a file system inotify does not cover, no barrier events, no watches left). */
  private disabled: string | undefined;
  /** Barrier timeouts in a row. */
  private timeouts = 0;
  private rootId = '';
  /** The mount points inside the target when the worker started (mountsUnder). */
  private mounts = '';
  /** Snapshot id of the last scan made through the journal, after its create succeeded. */
  private base: string | undefined;
  /** Files with several hard links in the base's scan (always lstat'd again). */
  private linked = new Set<string>();
  /** A take() whose create has not yet committed (its epoch started at its barrier). */
  private pending = false;
  /** Events of the epoch before the current one (the count bound needs two). */
  private prevCount = 0;
  private seq = 0;
  /** The barrier file the last barrier left in place (the next barrier renames it: no new inode per create). */
  private lastFile: string | undefined;
  private waiters = new Map<string, (m: EpochMsg) => void>();
  /** Directories watched when the worker got ready (for tests and notes). */
  watchedDirs = 0;
  /** The count bound of the running worker's inotify instance (procMaxEvents, read at start). */
  private queueBound = 8192;

  /** This process's own barrier folder, `<barrierBase>/<pid>`: another process's barriers are not its epochs. */
  private readonly barrierDir: string;

  constructor(
    readonly root: string,
    private readonly barrierBase: string,
  ) {
    this.barrierDir = path.join(barrierBase, String(process.pid));
  }

  private start(): Promise<void> {
    this.stop();
    this.mounts = mountsUnder(this.root);
    this.broken = undefined;
    this.base = undefined;
    this.pending = false;
    this.prevCount = 0;
    this.lastFile = undefined;
    this.queueBound = procMaxEvents();
    fs.mkdirSync(this.barrierDir, { recursive: true, mode: 0o700 });
    for (const n of fs.readdirSync(this.barrierDir)) fs.rmSync(path.join(this.barrierDir, n), { force: true });
    // folders of processes that are gone, and barrier files an older version left in the base
    for (const n of fs.readdirSync(this.barrierBase))
      if (n.startsWith('b-') || (/^\d+$/.test(n) && Number(n) !== process.pid && !pidAlive(Number(n))))
        fs.rmSync(path.join(this.barrierBase, n), { recursive: true, force: true });
    const w = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { root: this.root, barrierDir: this.barrierDir, localFs: [...LOCAL_FS] },
    });
    w.unref();
    this.worker = w;
    this.ready = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.invalidate(w, 'watching the tree took too long');
        resolve();
      }, journalTuning.readyTimeoutMs);
      timer.unref();
      type Msg = { type: string; reason?: string; error?: string; watched?: number; dev?: number; ino?: number };
      w.on('message', (m: Msg) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          this.watchedDirs = m.watched ?? 0;
          this.rootId = `${m.dev}:${m.ino}`;
          if (m.error) this.invalidate(w, m.error);
          resolve();
        } else if (m.type === 'invalid') this.invalidate(w, m.reason ?? 'watcher error');
        else if (m.type === 'epoch') this.waiters.get((m as unknown as EpochMsg).name)?.(m as unknown as EpochMsg);
      });
      const gone = (why: string): void => {
        clearTimeout(timer);
        this.invalidate(w, why);
        resolve();
      };
      w.on('error', (e) => gone(`the watch worker failed: ${e.message}`));
      w.on('exit', (c) => gone(`the watch worker exited (code ${c})`));
    });
    return this.ready;
  }

  private invalidate(w: Worker, reason: string): void {
    if (w !== this.worker || this.broken) return;
    this.broken = reason;
    this.base = undefined;
  }

  /** Stop the worker and its watchers, and remove the barrier file. */
  stop(): void {
    try {
      if (this.lastFile !== undefined) fs.rmSync(this.lastFile, { force: true });
    } catch {
      /* the next start() of a journal on this state dir sweeps it */
    }
    this.lastFile = undefined;
    const w = this.worker;
    this.worker = undefined;
    this.ready = undefined;
    if (w) void w.terminate().catch(() => undefined);
  }

  /** Wait until the worker has read every event queued before now, and take what it recorded. */
  private barrier(): Promise<EpochMsg | undefined> {
    const name = `b-${process.pid}-${++this.seq}`;
    const file = path.join(this.barrierDir, name);
    return new Promise<EpochMsg | undefined>((resolve) => {
      const done = (m: EpochMsg | undefined): void => {
        clearTimeout(timer);
        this.waiters.delete(name);
        resolve(m);
      };
      const timer = setTimeout(() => done(undefined), journalTuning.barrierTimeoutMs);
      this.waiters.set(name, done);
      try {
        // one empty file, renamed from barrier to barrier (IN_MOVED_TO carries the new name, as IN_CREATE
        // did): creating and removing a file per create cost an inode each time (up to ~1 ms on ext4)
        if (this.lastFile === undefined) fs.writeFileSync(file, '', { mode: 0o600 });
        else
          try {
            fs.renameSync(this.lastFile, file);
          } catch {
            fs.writeFileSync(file, '', { mode: 0o600 });
          }
        this.lastFile = file;
      } catch {
        this.lastFile = undefined;
        done(undefined);
      }
    });
  }

  /**
   * Start a create: the changes since the base when the journal can be trusted for a create whose
   * stat cache is snapshot `parentId`, else a note saying why the full walk is needed. Either way a
   * new epoch starts here; `commit(id)` after the create succeeded makes `id` the base.
   */
  async take(parentId: string | undefined): Promise<Take> {
    const t = await this.takeInner(parentId);
    this.lastNote = t.note;
    if (t.changed) this.sinceFull++;
    else {
      this.sinceFull = 0;
      this.fullAt = Date.now();
    }
    return t;
  }

  /** Journal creates since the last full walk, and when that was (ms since the epoch). */
  private sinceFull = 0;
  private fullAt = 0;

  /** What the last take() said: "journal: …" or "full walk: <why>". */
  lastNote = '';

  private async takeInner(parentId: string | undefined): Promise<Take> {
    this.pending = false;
    const base = this.base;
    this.base = undefined;
    if (!this.disabled && this.broken && /max_user_watches|EMFILE|inotify does not fully cover/.test(this.broken))
      this.disabled = this.broken;
    if (!this.disabled && !this.worker) {
      for (const [what, dir] of [
        ['the target', this.root],
        ['the state dir', path.dirname(this.barrierBase)],
      ]) {
        let type: number | undefined;
        try {
          type = fs.statfsSync(dir).type;
        } catch {
          /* reported by the scan (target) or the barrier (state dir) */
        }
        if (type !== undefined && !LOCAL_FS.has(type))
          this.disabled = `${what} is on a file system inotify does not fully cover (type 0x${type.toString(16)})`;
      }
    }
    if (this.disabled) {
      this.stop();
      return { note: `full walk: journal off: ${this.disabled}` };
    }
    let fresh = false;
    let why: string | undefined;
    if (!this.worker || this.broken) {
      why = this.broken ? `journal invalid: ${this.broken}` : 'journal starting';
      fresh = true;
      await this.start();
    } else await this.ready;
    if (this.broken) return { note: `full walk: journal invalid: ${this.broken}` };
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(this.root);
    } catch {
      /* the scan reports a missing target */
    }
    if (!st || `${st.dev}:${st.ino}` !== this.rootId) {
      this.broken = 'the target directory was moved or replaced';
      return { note: `full walk: journal invalid: ${this.broken}` };
    }
    if (mountsUnder(this.root) !== this.mounts) {
      // a file system mounted (or unmounted) inside the target after its directories were watched:
      // its files raise no event on the watches below the mount point
      this.broken = 'a file system was mounted or unmounted inside the target';
      return { note: `full walk: journal invalid: ${this.broken}` };
    }
    const m = await this.barrier();
    if (!m) {
      this.broken = `no barrier event within ${journalTuning.barrierTimeoutMs} ms`;
      if (++this.timeouts >= 3) this.disabled = `${this.timeouts} barrier timeouts in a row`;
      return { note: `full walk: journal invalid: ${this.broken}` };
    }
    this.timeouts = 0;
    const events = this.prevCount + m.count;
    this.prevCount = m.count;
    this.pending = true;
    if (m.error || this.broken) {
      this.pending = false;
      return { note: `full walk: journal invalid: ${m.error ?? this.broken}` };
    }
    if (fresh) return { note: `full walk: ${why}` };
    if (!base) return { note: 'full walk: no scan of this process to start from' };
    if (base !== parentId)
      return { note: `full walk: the parent ${parentId ?? '(none)'} is not the journal's base ${base}` };
    const max = journalTuning.maxEvents > 0 ? journalTuning.maxEvents : this.queueBound;
    if (events >= max)
      return { note: `full walk: ${events} events in two epochs (limit ${max}: inotify may have overflowed)` };
    if (this.sinceFull >= journalTuning.fullWalkCreates || Date.now() - this.fullAt >= journalTuning.fullWalkMs)
      return {
        note: `full walk: the periodic one (every ${journalTuning.fullWalkCreates} creates or ${Math.round(journalTuning.fullWalkMs / 60_000)} minutes), for what inotify cannot see`,
      };
    const paths = new Set(m.paths);
    for (const p of this.linked) paths.add(p);
    return {
      changed: { dirs: new Set(m.dirs), paths, trees: new Set(m.trees), linked: new Set(this.linked) },
      note: `journal: ${m.paths.length} paths, ${m.dirs.length} directories, ${m.trees.length} subtrees (${events} events)`,
    };
  }

  /** The create that called take() succeeded with snapshot `id`: the journal is now relative to it. */
  commit(id: string, linked: Set<string>): void {
    if (this.pending && !this.broken) {
      this.base = id;
      this.linked = linked;
    }
    this.pending = false;
  }

  /** The create that called take() failed: the next one does the full walk. */
  abandon(): void {
    this.pending = false;
    this.base = undefined;
  }
}

/**
 * The mount points at or below `root` (from /proc/self/mountinfo, field 5, octal escapes as written),
 * sorted and joined by newlines: compared at every take(), so a file system mounted inside the target
 * after the watches were made (whose files raise no event on them) makes the next create walk in
 * full. `?` when mountinfo cannot be read (then only the worker's statfs check of new directories holds).
 */
export function mountsUnder(root: string): string {
  let info: string;
  try {
    info = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '?';
  }
  const unescape = (p: string): string =>
    p.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  let real = root;
  try {
    real = fs.realpathSync.native(root); // (one realpath(3): the JS walk lstats every component)
  } catch {
    /* a missing target is the scan's to report */
  }
  const out: string[] = [];
  for (const line of info.split('\n')) {
    const mp = line.split(' ')[4];
    if (!mp) continue;
    const p = unescape(mp);
    if (p === real || p.startsWith(real.endsWith('/') ? real : real + '/')) out.push(p);
  }
  return out.sort().join('\n');
}

const journals = new Map<string, ChangeJournal>();

/**
 * The change journal of target directory `root` in this process (one per state dir and target),
 * its barrier directory under `barrierDir`. Created on first use; its worker starts at the first take().
 */
export function journalFor(root: string, barrierDir: string): ChangeJournal {
  const key = `${barrierDir}\0${root}`;
  let j = journals.get(key);
  if (!j) {
    j = new ChangeJournal(root, barrierDir);
    journals.set(key, j);
  }
  return j;
}

/** The journal of target directory `root` in this process, if there is one (tests). */
export function existingJournal(root: string): ChangeJournal | undefined {
  for (const j of journals.values()) if (j.root === root) return j;
  return undefined;
}

/** Stop every journal of this process (tests; a server's exit ends them anyway). */
export function closeJournals(): void {
  for (const j of journals.values()) j.stop();
  journals.clear();
}

/**
 * Whether the change journal is turned off by AGENTKEEP_DIR_JOURNAL=0 (or false, off, no; 1, true, on,
 * yes or unset: on). Any other value warns once on stderr and the journal stays on.
 */
export function journalOffByEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return !envSwitch(env, 'AGENTKEEP_DIR_JOURNAL', true, 'the change journal');
}
