/**
 * Test helpers for the qemu backend: build the tiny guest (scripts/qemu-guest.sh, cached in
 * test/.cache/qemu-guest), start real QEMU VMs under TCG with a QMP socket, read the serial log's
 * tick counter, and stop every VM started (stopAllVms in after()).
 */
import { execFile, execFileSync } from 'node:child_process';
import { promises as fs, existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { REPO } from './paths';

export interface Vm {
  dir: string;
  socket: string;
  /** The guest agent socket (-chardev socket … virtserialport org.qemu.guest_agent.0), when started with `qga`. */
  qga?: string;
  serial: string;
  pid: number;
  disk: string;
}

const started = new Set<number>();

/** Build (or reuse) the guest kernel + initramfs (and initrd-qga.gz with `withQga`); returns the cache dir. */
export function guestDir(withQga = false): string {
  return execFileSync('bash', [path.join(REPO, 'scripts', 'qemu-guest.sh'), ...(withQga ? ['--with-qga'] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

/**
 * Start a VM in `dir` (qmp.sock, serial.log, vm.pid, disk file). `kernel`: boot the tick guest
 * (else firmware only, no OS: enough where RAM content does not matter). `format`: the disk's format.
 * Resolves when the QMP socket exists (and, with a kernel, when the guest printed its first tick).
 */
export async function startVm(
  dir: string,
  opts: { kernel?: boolean; format?: 'qcow2' | 'raw'; memMiB?: number; qga?: boolean } = {},
): Promise<Vm> {
  await fs.mkdir(dir, { recursive: true });
  const format = opts.format ?? 'qcow2';
  const disk = path.join(dir, `disk.${format}`);
  if (!existsSync(disk)) await run('qemu-img', ['create', '-q', '-f', format, disk, '32M']);
  const socket = path.join(dir, 'qmp.sock');
  const serial = path.join(dir, 'serial.log');
  const pidfile = path.join(dir, 'vm.pid');
  await fs.rm(socket, { force: true });
  await fs.rm(serial, { force: true });
  const args = [
    '-machine',
    'q35,accel=tcg',
    '-m',
    String(opts.memMiB ?? 96),
    '-smp',
    '1',
    '-nodefaults',
    '-display',
    'none',
    '-serial',
    `file:${serial}`,
    '-blockdev',
    `driver=file,filename=${disk},node-name=file0`,
    '-blockdev',
    `driver=${format},file=file0,node-name=disk0`,
    '-device',
    'virtio-blk-pci,drive=disk0',
    '-qmp',
    `unix:${socket},server=on,wait=off`,
    '-pidfile',
    pidfile,
    '-daemonize',
  ];
  const qga = opts.qga ? path.join(dir, 'qga.sock') : undefined;
  if (qga) {
    await fs.rm(qga, { force: true });
    args.push(
      '-chardev',
      `socket,path=${qga},server=on,wait=off,id=qga0`,
      '-device',
      'virtio-serial-pci',
      '-device',
      'virtserialport,chardev=qga0,name=org.qemu.guest_agent.0',
    );
  }
  if (opts.kernel || qga) {
    const g = guestDir(!!qga);
    args.push(
      '-kernel',
      path.join(g, 'vmlinuz'),
      '-initrd',
      path.join(g, qga ? 'initrd-qga.gz' : 'initrd.gz'),
      '-append',
      'console=ttyS0 quiet panic=-1',
    );
  }
  await run('qemu-system-x86_64', args);
  const pid = Number((await fs.readFile(pidfile, 'utf8')).trim());
  started.add(pid);
  const vm: Vm = { dir, socket, serial, pid, disk, ...(qga ? { qga } : {}) };
  await waitFor(() => existsSync(socket), 10_000, 'QMP socket');
  if (opts.kernel || qga) await waitFor(() => ticks(vm).length > 0, 60_000, 'first guest tick');
  if (qga && !readFileSync(serial, 'utf8').includes('AK-QGA-READY'))
    throw new Error(`the guest agent did not start in the guest: ${readFileSync(serial, 'utf8').slice(0, 2000)}`);
  return vm;
}

/** Poll `cond` every 50 ms until true; throws after `ms`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The tick numbers in the serial log from byte `from` on. */
export function ticks(vm: Vm, from = 0): number[] {
  let text = '';
  try {
    text = readFileSync(vm.serial).subarray(from).toString('utf8');
  } catch {
    return [];
  }
  return [...text.matchAll(/AK-TICK (\d+)/g)].map((m) => Number(m[1]));
}

/** Current size of the serial log in bytes. */
export function serialSize(vm: Vm): number {
  try {
    return readFileSync(vm.serial).length;
  } catch {
    return 0;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kill one VM (SIGKILL) and wait until it is gone. */
export async function stopVm(vm: Vm | undefined): Promise<void> {
  if (!vm) return;
  if (alive(vm.pid)) process.kill(vm.pid, 'SIGKILL');
  await waitFor(() => !alive(vm.pid), 10_000, `QEMU ${vm.pid} to exit`).catch(() => undefined);
  started.delete(vm.pid);
}

/** Kill every VM these helpers started (for after()). */
export async function stopAllVms(): Promise<void> {
  for (const pid of [...started]) await stopVm({ pid } as Vm);
}

// Last resort when the test process ends without after() (crash, Ctrl-C of mocha): no VM outlives it.
process.on('exit', () => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});
