/**
 * Messages between the memory inspector webview (webview-ui/memory/main.ts, bundled to
 * out/memory.js) and the extension (extension/memory.ts), sent with postMessage. Types only.
 */
import type { LintFinding, MemoryFile, MemoryWrite, ResultOf, StoreDescription } from '../../sidecar/protocol';

/** One configured store as the inspector shows it: its files (memory.list) or why they could not be read. */
export interface StoreView {
  store: string;
  files: MemoryFile[];
  error?: string;
  /**
   * What the store is and can do (memory.list `descriptions`, or store.describe); absent when the
   * sidecar could not say.
   */
  description?: StoreDescription;
}

/** Extension -> webview: everything the list shows. Sent on open and after each change. */
export interface StateMessage {
  type: 'state';
  stores: StoreView[];
  /** memory.lint findings over all stores (empty when lint is unavailable: see lintNote). */
  findings: LintFinding[];
  /** Why there are no findings to show, e.g. "Lint is not available in this sidecar version." */
  lintNote?: string;
  /** Whether the workspace is trusted (edit/delete need trust). */
  trusted: boolean;
  /** Restore points of the target that captured agent state (for "Diff against restore point…"). */
  restorePoints: number;
  /** memory.history over all stores (the Timeline view), oldest first. */
  history?: MemoryWrite[];
  /** Why the Timeline is empty or partial (memory.history warnings, or the error). */
  historyNote?: string;
  /** Entry to select after this state is shown (store + id). */
  select?: { store: string; id: string };
}

/** Extension -> webview: the detail of the selected entry (memory.show), or why it failed. */
export interface DetailMessage {
  type: 'detail';
  store: string;
  id: string;
  show?: ResultOf<'memoryShow'>;
  error?: string;
}

/** Extension -> webview: a note to show at the top (e.g. after a conflict). */
export interface NoticeMessage {
  type: 'notice';
  text: string;
  severity: 'info' | 'warning' | 'error';
}

/** Extension -> webview: switch the view (the Timeline, and the write to show in it). */
export interface ViewMessage {
  type: 'view';
  view: 'list' | 'timeline';
  write?: { store: string; id: string };
}

export type ToInspector = StateMessage | DetailMessage | NoticeMessage | ViewMessage;

/** Webview -> extension. */
export type FromInspector =
  | { type: 'ready' }
  | { type: 'refresh' }
  | { type: 'select'; store: string; id: string }
  | { type: 'edit'; store: string; id: string; text: string; expectedHash?: string }
  | { type: 'delete'; store: string; id: string; expectedHash?: string }
  | { type: 'openSession'; store: string; id: string; trace: number }
  | { type: 'diff'; store: string }
  /** Undo one write of the Timeline (memory.undoWrite). */
  | { type: 'undoWrite'; store: string; write: string }
  /** Propose lint --fix and show it in the diff editor (memory.lintFix). */
  | { type: 'lintFix' }
  /** What the webview shows after a render (tests read it through the extension API). */
  | {
      type: 'rendered';
      entries: number;
      shown: number;
      detail?: string;
      traces?: number;
      findings: number;
      readOnlyNote?: string;
      /** Broken files the list shows (MemoryFile.broken), each with what is broken and the fix. */
      broken?: number;
      /** The detail's "provenance unavailable: …" line, when the store's history cannot be read. */
      provenanceUnavailable?: string;
      /** Timeline view: rows (entries) and marks (writes) drawn, and the write shown (its id). */
      timeline?: { rows: number; marks: number; write?: string };
    };
