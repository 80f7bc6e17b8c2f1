/**
 * The HTML page of an AgentKeep webview: a strict Content-Security-Policy (nothing but the page's own
 * nonce'd style and script, images and fonts from the extension), the bundled script from out/, the
 * stylesheet inline under the nonce, and a `<main id="app">` that the script renders into.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

/** What a webview page holds. */
export interface WebviewPage {
  /** Bundle file name in out/, e.g. "webview.js". */
  script: string;
  /** Page title. */
  title: string;
  /** The stylesheet (uses VS Code's theme variables). */
  css: string;
  /** Text shown until the script renders. */
  loading: string;
}

/** The page HTML for `webview` (a fresh nonce on each call). */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, page: WebviewPage): string {
  const nonce = randomBytes(16).toString('base64');
  const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'out', page.script));
  const csp = [
    `default-src 'none'`,
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${page.title}</title>
<style nonce="${nonce}">${page.css}</style>
</head>
<body>
<main id="app" aria-live="polite"><p class="sub">${page.loading}</p></main>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}
