// proximity in VS Code: starts `proximity lsp` for every file on disk. Everything the
// person sees (a sibling's lines, conflicts as they type, the hover, the code actions,
// the lens) comes from the server; this file only starts and stops it.
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration("proximity");
  const serverOptions: ServerOptions = {
    command: config.get<string>("command", "proximity"),
    args: config.get<string[]>("args", ["lsp"]),
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannelName: "proximity",
  };
  client = new LanguageClient("proximity", "proximity", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => void client?.stop() });
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
