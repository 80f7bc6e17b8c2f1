/**
 * The `agent-zero` store kind: `agent-zero:/abs/root[?url=http://host:port]` (the Agent Zero
 * install, Docker: the folder mounted at /a0; `url` = its running web UI, which enables edits), or a
 * root on another machine, `agent-zero:ssh://user@host[:port]/abs/root` (read over SFTP; `url` as
 * reachable from the sidecar), and where Agent Zero roots are found in a target's local root.
 */
import * as path from 'node:path';
import { checkStoreOptions, splitStoreOptions, storePlace, transportOf } from '../files';
import type { GuestAgentPlace } from '../transport/guestLocation';
import { SSH_OPTIONS, type SshLocation } from '../transport/location';
import type { StoreFactory } from '../types';
import { AgentZeroStore } from './index';

const EXAMPLE = 'agent-zero:/abs/root?url=http://127.0.0.1:50001';

/** Parsed `agent-zero:` store (`ssh`: how to reach the root's machine when it is not this one). */
export interface AgentZeroStoreOptions {
  root: string;
  url?: string;
  ssh?: SshLocation;
  /** A root inside a VM reached through its QEMU guest agent. */
  guest?: GuestAgentPlace;
}

const SSH_FORM = 'agent-zero:ssh://user@host[:port]/abs/root';

/**
 * Agent Zero roots in a local directory tree: the tree itself, or `<root>/a0` (the Docker mount
 * point in a guest's root filesystem), when check passes AND a memory subdir holds an index.pkl (a
 * FAISS docstore Agent Zero saved): an empty usr/ is no sure sign. Store strings.
 */
async function detectAgentZero(localRoot: string): Promise<string[]> {
  const out: string[] = [];
  for (const root of [localRoot, path.join(localRoot, 'a0')]) {
    const s = new AgentZeroStore(root);
    if (
      !(await s.check().then(
        () => true,
        () => false,
      ))
    )
      continue;
    const files = await s.agentStateFiles().catch(() => [] as string[]);
    if (files.some((f) => f.endsWith('/index.pkl'))) out.push(`agent-zero:${root}`);
  }
  return out;
}

export const agentZeroStore: StoreFactory<AgentZeroStoreOptions> = {
  kind: 'agent-zero',
  kindName: 'Agent Zero',
  forms: [
    'agent-zero:/abs/root',
    'agent-zero:/abs/root?url=http://HOST:PORT',
    `${SSH_FORM}[?url=http://HOST:PORT]`,
    'agent-zero:qga:/abs/qga.sock:/abs/root',
    'agent-zero:pve-agent://HOST[:PORT]/NODE/VMID/abs/root',
  ],
  example: EXAMPLE,
  parse: (rest, spec) => {
    const { path: p, params } = splitStoreOptions(rest);
    const place = storePlace(p, params, spec, `Use an absolute path, e.g. ${EXAMPLE}.`, SSH_FORM);
    checkStoreOptions('agent-zero', params, spec, place.ssh ? ['url', ...SSH_OPTIONS] : ['url'], EXAMPLE);
    return {
      root: place.path,
      url: params.get('url') || undefined,
      ...(place.ssh ? { ssh: place.ssh } : {}),
      ...(place.guest ? { guest: place.guest } : {}),
    };
  },
  create: (p) => new AgentZeroStore(p.options.root, p.spec, { url: p.options.url }, transportOf(p.options)),
  detect: detectAgentZero,
};
