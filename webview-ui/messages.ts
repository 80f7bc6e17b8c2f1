/**
 * Messages between the "Restore point details" webview (webview-ui/main.ts) and the extension
 * (extension/details.ts), sent with postMessage. Types only.
 */
import type { ChangeSummary, RestorePoint, Scope } from '../sidecar/protocol';

/** Extension -> webview: what to show. `changes` is undefined when the diff failed (`diffError`). */
export interface ShowMessage {
  type: 'show';
  rp: RestorePoint;
  changes?: ChangeSummary;
  diffError?: string;
  /** Whether the workspace is trusted (restore/keep/delete buttons are disabled otherwise). */
  trusted: boolean;
  /** Display label (a pre-restore point names the restored point by its label). */
  title: string;
  /** Age text computed by the extension ("5m ago"). */
  age: string;
  /** Reason text ("`npm install left-pad` from setup.sh:3"). */
  reason: string;
  /**
   * Who took it when the agent or a hook did (extension/origin.ts): `who` in words ("an agent hook
   * around the agent's own tool call"), `text` the sentence ("by the agent hermes in session 3f2a…:
   * pip install requests"). Absent for a restore point a person took.
   */
  origin?: { who: string; text: string };
  /** A pre without its post: what happened and what to do (absent otherwise). */
  withoutPost?: string;
}

/** Webview -> extension. */
export type ActionMessage =
  { type: 'ready' } | { type: 'restore'; scope: Scope } | { type: 'keep' } | { type: 'delete' } | { type: 'refresh' };
