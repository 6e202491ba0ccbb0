// agentproof's Pi extension (docs/pi.md). agentproof writes this file and its
// configuration (AGENTPROOF_PI_CONFIG, JSON) into the session's directory and loads it
// with `pi --mode rpc -e <this file>`. It gives Pi three things:
//
//  1. A permission gate: before a gated tool (write, edit) runs, it asks through the
//     RPC dialog `confirm` (title "agentproof-permission:<nonce>", message the JSON of
//     the tool call); a negative or cancelled answer blocks the call.
//  2. Native questions: the tool `ask_user` asks the human through the RPC dialogs
//     select, confirm, input or editor and returns the answer to the model.
//  3. The control plane's semantic tools: one Pi tool per MCP tool, each call proxied
//     to a stdio MCP server (`agentproof mcp`) started with the current run's identity.
//     agentproof sends the identity before every prompt with the extension command
//     /agentproof-run <json> (never on disk, never in the conversation); a new run
//     restarts the server.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const config = JSON.parse(readFileSync(process.env.AGENTPROOF_PI_CONFIG, "utf8"));

// McpClient is a minimal MCP client over stdio (newline-delimited JSON-RPC 2.0).
class McpClient {
  constructor(command, args, env) {
    this.child = spawn(command, args, { env, stdio: ["pipe", "pipe", "ignore"] });
    this.nextId = 1;
    this.pending = new Map();
    this.buffer = "";
    this.closed = false;
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk) => this.onData(chunk));
    this.child.on("exit", (code, signal) => this.fail(new Error(`the agentproof MCP server exited (${signal ?? code})`)));
    this.child.on("error", (err) => this.fail(err));
    this.ready = this.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "agentproof-pi", version: "1" },
    }).then(() => this.send({ jsonrpc: "2.0", method: "notifications/initialized", params: {} }));
  }
  onData(chunk) {
    this.buffer += chunk;
    let i;
    while ((i = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, i).replace(/\r$/, "");
      this.buffer = this.buffer.slice(i + 1);
      if (!line.trim()) continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (msg.id !== undefined && this.pending.has(msg.id)) {
        const { resolve, reject } = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) reject(new Error(msg.error.message ?? JSON.stringify(msg.error)));
        else resolve(msg.result);
      }
    }
  }
  fail(err) {
    this.closed = true;
    for (const { reject } of this.pending.values()) reject(err);
    this.pending.clear();
  }
  send(msg) {
    if (this.closed) throw new Error("the agentproof MCP server is not running");
    this.child.stdin.write(JSON.stringify(msg) + "\n");
  }
  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ jsonrpc: "2.0", id, method, params });
      } catch (err) {
        this.pending.delete(id);
        reject(err);
      }
    });
  }
  async call(name, args) {
    await this.ready;
    return this.request("tools/call", { name, arguments: args ?? {} });
  }
  close() {
    this.closed = true;
    try {
      this.child.stdin.end();
    } catch {}
    const child = this.child;
    setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {}
    }, 2000).unref();
  }
}

let run = null; // {apiUrl, runId, runToken, stateDir}
let mcp = null;
let mcpRun = "";

function server() {
  if (!run || !run.runId || !run.runToken || !run.apiUrl) {
    throw new Error("agentproof: no run identity for the semantic tools (the driver sends /agentproof-run before each prompt)");
  }
  if (mcp && mcpRun === run.runId && !mcp.closed) return mcp;
  if (mcp) mcp.close();
  const env = { ...process.env };
  delete env.AGENTPROOF_PI_CONFIG;
  env.AGENTPROOF_API_URL = run.apiUrl;
  env.AGENTPROOF_RUN_TOKEN = run.runToken;
  env.AGENTPROOF_RUN_ID = run.runId;
  env.AGENTPROOF_AGENT_STATE_DIR = run.stateDir;
  mcp = new McpClient(config.mcp.command, config.mcp.args, env);
  mcpRun = run.runId;
  return mcp;
}

function text(result) {
  return (result?.content ?? [])
    .filter((c) => c && c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

export default function (pi) {
  pi.registerCommand("agentproof-run", {
    description: "agentproof: the run the next prompt belongs to (sent by the driver)",
    handler: async (args) => {
      run = JSON.parse(args);
    },
  });

  const gated = new Set(config.permission?.tools ?? []);
  if (gated.size > 0) {
    pi.on("tool_call", async (event, ctx) => {
      if (!gated.has(event.toolName)) return;
      const input = event.input ?? {};
      const path = input.path ?? input.file_path ?? input.filePath ?? "";
      const request = { toolCallId: event.toolCallId, tool: event.toolName, path, input };
      const ok = await ctx.ui.confirm(`agentproof-permission:${config.permission.nonce}`, JSON.stringify(request));
      if (!ok) {
        return { block: true, reason: `The human did not allow this ${event.toolName} of ${path || "the file"}; it was not carried out.` };
      }
    });
  }

  if (config.questions?.tool) {
    pi.registerTool({
      name: config.questions.tool,
      label: "Ask the human",
      description:
        "Ask the human a question and wait for the answer. kind select: choose one of options; confirm: yes or no; input: one line of text; editor: multi-line text (prefill optional).",
      parameters: {
        type: "object",
        properties: {
          kind: { type: "string", enum: ["select", "confirm", "input", "editor"] },
          title: { type: "string", description: "the question" },
          message: { type: "string", description: "details (confirm)" },
          options: { type: "array", items: { type: "string" }, description: "the choices (select)" },
          placeholder: { type: "string", description: "input placeholder" },
          prefill: { type: "string", description: "editor prefill" },
        },
        required: ["kind", "title"],
      },
      async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
        let answer;
        switch (params.kind) {
          case "select":
            answer = { value: (await ctx.ui.select(params.title, params.options ?? [])) ?? null };
            break;
          case "confirm":
            // Pi reports a negative answer and a dismissal alike (false).
            answer = { confirmed: await ctx.ui.confirm(params.title, params.message ?? "") };
            break;
          case "input":
            answer = { value: (await ctx.ui.input(params.title, params.placeholder)) ?? null };
            break;
          case "editor":
            answer = { value: (await ctx.ui.editor(params.title, params.prefill)) ?? null };
            break;
          default:
            throw new Error(`unknown question kind ${params.kind}`);
        }
        return { content: [{ type: "text", text: JSON.stringify({ kind: params.kind, ...answer }) }], details: answer };
      },
    });
  }

  for (const tool of config.mcp?.tools ?? []) {
    pi.registerTool({
      name: (config.mcp.prefix ?? "") + tool.name,
      label: tool.name,
      description: tool.description ?? tool.name,
      parameters: tool.inputSchema ?? { type: "object" },
      async execute(_toolCallId, params) {
        const result = await server().call(tool.name, params);
        const out = text(result);
        if (result?.isError) throw new Error(out || `${tool.name} failed`);
        return { content: [{ type: "text", text: out }], details: {} };
      },
    });
  }

  pi.on("session_shutdown", async () => {
    if (mcp) mcp.close();
  });
}
