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
}

/** Webview -> extension. */
export type ActionMessage =
  { type: 'ready' } | { type: 'restore'; scope: Scope } | { type: 'keep' } | { type: 'delete' } | { type: 'refresh' };
