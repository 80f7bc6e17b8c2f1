/**
 * Risky config files (sidecar/protocol/configFiles.ts `riskyConfigFile`, decided from the path alone: the
 * agent's config.yaml, .env, SOUL.md, skills, dependency manifests, lockfiles, compose files, units,
 * crontabs, apt sources). For such a file inside the agent's target (or under a store root):
 * - a CodeLens on line 1, "$(history) Restore point before editing (last: 5m ago)"
 *   (setting agentkeep.configFiles.codeLens);
 * - on the first unsaved change since the last restore point, a one-time, non-blocking
 *   "Take a restore point before changing config.yaml?" [Take restore point] [Not now]
 *   [Don't ask again] (setting agentkeep.configFiles.prompt).
 * Both hide in untrusted workspaces (taking a restore point needs trust).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  LensCommands,
  LensSettingKeys,
  type RestorePoint,
  type StoreDescription,
  type TargetDescription,
} from '../sidecar/protocol';
import type { RiskyConfig } from '../sidecar/protocol/configFiles';
import { configFilesCodeLens, configFilesPrompt, isTrusted, readAgentConfig } from './config';
import { riskyConfigOf } from './configScope';
import { formatAge } from './format';
import type { Sidecar } from './sidecar';

export { riskyConfigOf } from './configScope';

/** Command of the lens and the prompt: agentkeep.restorePointBeforeEdit({file}) (the protocol's LensCommands). */
export const BEFORE_EDIT_COMMAND = LensCommands.restorePointBeforeEdit;

/** The prompt's buttons. */
export const PROMPT_TAKE = 'Take restore point';
export const PROMPT_NOT_NOW = 'Not now';
export const PROMPT_NEVER = "Don't ask again";

/** A prompt that was shown (kept for tests). */
export interface ConfigPromptRecord {
  file: string;
  message: string;
  answer: string | undefined;
  /** The restore point taken (or reused) after "Take restore point". */
  restorePoint?: RestorePoint;
  reused?: boolean;
}

/** Takes (or reuses) a restore point before a config edit; provided by commands.ts. */
export type TakeBeforeEdit = (file: string) => Promise<{ restorePoint: RestorePoint; reused: boolean } | undefined>;

/** The config-file lens provider and the first-change prompt. */
export class ConfigFiles implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.emitter.event;
  private latest: RestorePoint | undefined;
  private latestKnown = false;
  /** When the newest restore point was last read (ms since epoch). */
  private lastRefresh = 0;
  /** file -> id of the newest restore point when the user was asked (or took one) for it. */
  private readonly asked = new Map<string, string>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly timer: NodeJS.Timeout;
  /** Prompts shown (tests read them). */
  readonly prompts: ConfigPromptRecord[] = [];
  /** Test hook: answer prompts with this instead of showing a notification. */
  answer: ((message: string, buttons: string[]) => Promise<string | undefined>) | undefined;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly take: TakeBeforeEdit,
  ) {
    this.disposables.push(
      vscode.languages.registerCodeLensProvider({ scheme: 'file' }, this),
      vscode.workspace.onDidChangeTextDocument((e) => this.onChange(e)),
      sidecar.onDidChange(() => void this.refresh()),
    );
    // the age in the lens ("last: 5m ago") moves on
    this.timer = setInterval(() => this.emitter.fire(), 30_000);
  }

  /** Re-read the newest restore point and refresh the lenses. */
  async refresh(): Promise<void> {
    this.lastRefresh = Date.now();
    const config = readAgentConfig();
    if (!config) {
      this.latest = undefined;
      this.latestKnown = false;
    } else {
      try {
        const rps = await this.sidecar.request('restorePointList', { target: config.target });
        this.latest = rps.find((r) => r.status !== 'failed');
        this.latestKnown = true;
      } catch {
        this.latestKnown = false;
      }
    }
    this.emitter.fire();
  }

  /** Record that a restore point was just taken for `file` (no prompt until the next one). */
  noteTaken(file: string, rp: RestorePoint): void {
    this.latest = rp;
    this.latestKnown = true;
    this.asked.set(file, rp.id);
    this.emitter.fire();
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!configFilesCodeLens() || !isTrusted()) return [];
    const config = readAgentConfig();
    if (!config) return [];
    const stores = await this.sidecar.describeStores(config.stores);
    const risky = riskyConfigOf(doc.uri.fsPath, { stores }, await this.describe(config.target));
    if (!risky) return [];
    if (!this.latestKnown) await this.refresh();
    const last = this.latest ? `last: ${formatAge(this.latest.createdAt)}` : 'none yet';
    const range = new vscode.Range(0, 0, 0, 0);
    return [
      new vscode.CodeLens(range, {
        title: `$(history) Restore point before editing (${last})`,
        command: BEFORE_EDIT_COMMAND,
        arguments: [{ file: doc.uri.fsPath }],
        tooltip: risky.reason,
      }),
    ];
  }

  /** The target's description from the sidecar; undefined when it cannot say (any file then counts). */
  private async describe(target: string): Promise<TargetDescription | undefined> {
    return this.sidecar.describeTarget(target).catch(() => undefined);
  }

  private readonly checking = new Set<string>();

  private onChange(e: vscode.TextDocumentChangeEvent): void {
    // The first edit arrives as a content change (isDirty still false) and then as a dirty-state
    // change (no content changes, isDirty true); reverts and reloads from disk are never dirty.
    if (e.document.uri.scheme !== 'file' || !e.document.isDirty) return;
    if (!configFilesPrompt() || !isTrusted()) return;
    const config = readAgentConfig();
    if (!config) return;
    const file = e.document.uri.fsPath;
    // cheap check first (no target scoping, the store descriptions known so far); a store not yet
    // described may make a file its own, so then the check below runs too
    const known = config.stores.map((s) => this.sidecar.knownStoreDescription(s));
    const allKnown = known.every(Boolean);
    if ((allKnown && !riskyConfigOf(file, { stores: known as StoreDescription[] })) || this.checking.has(file)) return;
    this.checking.add(file);
    void (async () => {
      let risky: RiskyConfig | undefined;
      try {
        const stores = await this.sidecar.describeStores(config.stores);
        risky = riskyConfigOf(file, { stores }, await this.describe(config.target));
        if (!risky) return;
        // restore points taken elsewhere (the CLI, another window) are noticed within 10 s
        if (!this.latestKnown || Date.now() - this.lastRefresh > 10_000) await this.refresh();
        const latestId = this.latest?.id ?? '';
        if (this.asked.get(file) === latestId) return; // already asked (or taken) since the last restore point
        this.asked.set(file, latestId);
      } finally {
        this.checking.delete(file);
      }
      await this.prompt(file, risky);
    })().catch((err) => this.sidecar.output.appendLine(`[extension] config-file prompt: ${String(err)}`));
  }

  private async prompt(file: string, risky: RiskyConfig): Promise<void> {
    const message = `Take a restore point before changing ${path.basename(file)}?`;
    const buttons = [PROMPT_TAKE, PROMPT_NOT_NOW, PROMPT_NEVER];
    const record: ConfigPromptRecord = { file, message, answer: undefined };
    this.prompts.push(record);
    const answer = this.answer
      ? await this.answer(message, buttons)
      : await vscode.window.showInformationMessage(`${message} ${risky.reason}`, ...buttons);
    record.answer = answer;
    if (answer === PROMPT_TAKE) {
      const r = await this.take(file);
      if (r) {
        record.restorePoint = r.restorePoint;
        record.reused = r.reused;
        this.noteTaken(file, r.restorePoint);
      }
    } else if (answer === PROMPT_NEVER) {
      await vscode.workspace
        .getConfiguration()
        .update(LensSettingKeys.configFilesPrompt, false, vscode.ConfigurationTarget.Global);
    }
  }

  dispose(): void {
    clearInterval(this.timer);
    this.emitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
