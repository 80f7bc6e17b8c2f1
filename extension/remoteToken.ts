/**
 * The remote sidecar's bearer token in SecretStorage ("AgentKeep: Set Remote Sidecar Token" /
 * "Clear Remote Sidecar Token"): the content of the `--token-file` that `agentkeep serve --ws` reads on
 * the sidecar's machine. Never in settings, the output channel or a log line.
 */
import * as vscode from 'vscode';
import { MIN_REMOTE_TOKEN_CHARS } from './remote';
import type { Sidecar } from './sidecar';
import { SidecarError } from './sidecar';

/** SecretStorage key of the remote sidecar's token. */
export const SIDECAR_TOKEN_KEY = 'agentkeep.sidecar.token';

/** Why `t` cannot be a sidecar token, or undefined when it can. */
export function checkSidecarToken(t: string): string | undefined {
  const v = t.trim();
  if (!v) return "Paste the token (the content of the sidecar's --token-file).";
  if (/\s/.test(v)) return 'A token has no spaces or line breaks.';
  if (v.length < MIN_REMOTE_TOKEN_CHARS)
    return `Too short (${v.length} characters): agentkeep serve --ws accepts at least ${MIN_REMOTE_TOKEN_CHARS}.`;
  return undefined;
}

/**
 * Ask for the token (password input) unless given, store it in SecretStorage; the sidecar link is
 * restarted by the SecretStorage change listener (extension.ts). Returns true when stored.
 * @throws SidecarError invalid_params for a token that cannot be one
 */
export async function setSidecarToken(
  secrets: vscode.SecretStorage,
  sidecar: Sidecar,
  token?: string,
): Promise<boolean> {
  let t = token;
  if (t === undefined) {
    t = await vscode.window.showInputBox({
      title: 'Remote sidecar token',
      prompt:
        "The content of the --token-file of agentkeep serve --ws on the sidecar's machine. Kept in VS Code's secret storage, never in settings.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => checkSidecarToken(v),
    });
    if (t === undefined) return false;
  }
  const bad = checkSidecarToken(t);
  if (bad) throw new SidecarError(`That is not a sidecar token. ${bad}`, 'invalid_params');
  await secrets.store(SIDECAR_TOKEN_KEY, t.trim());
  sidecar.output.appendLine('[extension] remote sidecar token stored in SecretStorage');
  void vscode.window.setStatusBarMessage("AgentKeep: remote sidecar token saved in VS Code's secret storage", 4000);
  return true;
}

/** Delete the token from SecretStorage. Returns whether one was stored. */
export async function clearSidecarToken(secrets: vscode.SecretStorage, sidecar: Sidecar): Promise<boolean> {
  const had = (await secrets.get(SIDECAR_TOKEN_KEY)) !== undefined;
  await secrets.delete(SIDECAR_TOKEN_KEY);
  sidecar.output.appendLine('[extension] remote sidecar token removed from SecretStorage');
  return had;
}
