#!/usr/bin/env node
// run.mjs drives proxmox-mcp with an official MCP TypeScript SDK client and
// prints one JSON line with what it saw. The Go tests (tests/e2e_node_test.go)
// start the daemon, run this and judge the result; this script judges
// nothing itself beyond "did the step run".
//
//   node run.mjs --sdk v1|v2 [--negotiation legacy|auto|<version>]
//                --transport http --url URL [--origin ORIGIN] [--no-key]
//                --scenario operator|read-only|refused|call [--attempts JSON]
//   node run.mjs --sdk v1|v2 [--negotiation ...] --transport stdio
//                --command BIN [--arg=A]... --scenario operator|read-only|refused
//
// --negotiation is the v2 client's versionNegotiation: legacy (the 2025
// initialize handshake), auto (probe server/discover, take the modern era
// when offered) or a version to pin; the v1 client knows only the legacy era.
// The key comes from $PMCP_KEY: over HTTP it is the bearer key, over stdio it
// is handed to the child process the same way.
//
// Scenarios:
//   operator   connect, list tools and prompts, search, describe, read the
//              cluster, start VM 101 and wait for its task with progress,
//              read its status, get the onboarding prompt.
//   read-only  connect, list tools, search, try proxmox_guest_power (hidden:
//              the call must fail) and a write through proxmox_api_call (the
//              policy must refuse it), read VM 101's status afterwards.
//   call       connect, list the tools' names and call --tool with the
//              arguments of --args (JSON): the booted tests' one call.
//   refused    connect and report how the connection failed (bad key, no
//              key, foreign Origin; over stdio, the server's stderr too).
//              Over HTTP, --attempts '[{"name", "key", "noKey", "origin"}]'
//              makes one connection per entry (key defaults to $PMCP_KEY)
//              and reports each under attempts.
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    sdk: { type: "string", default: "v2" },
    negotiation: { type: "string", default: "legacy" },
    transport: { type: "string" },
    url: { type: "string" },
    origin: { type: "string" },
    "no-key": { type: "boolean", default: false },
    attempts: { type: "string" },
    command: { type: "string" },
    arg: { type: "string", multiple: true, default: [] },
    scenario: { type: "string" },
    tool: { type: "string" },
    args: { type: "string", default: "{}" },
    timeout: { type: "string", default: "30000" },
  },
  strict: true,
});

const key = process.env.PMCP_KEY ?? "";
let serverStderr = "";
const timeout = Number(opt.timeout);

// describeError keeps what a person debugging a failed connection would look
// at: the class, the message, and the HTTP status when the SDK knows it.
function describeError(err) {
  const out = { name: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err) };
  for (const k of ["code", "status"]) {
    if (typeof err?.[k] === "number" || typeof err?.[k] === "string") out[k] = err[k];
  }
  if (err?.data && typeof err.data === "object") out.data = err.data;
  const status = [err?.status, err?.data?.status, err?.code].find((v) => typeof v === "number" && v >= 100 && v < 600);
  out.httpStatus = status;
  return out;
}

function negotiationOption(n) {
  if (n === "legacy" || n === "auto") return { mode: n };
  return { mode: { pin: n } };
}

// connect builds the client of the chosen SDK and transport and returns a
// small adapter, so that the scenarios read the same for both SDKs.
async function connect(a = { key, noKey: opt["no-key"], origin: opt.origin }) {
  const headers = {};
  if (!a.noKey) headers.Authorization = `Bearer ${a.key ?? key}`;
  if (a.origin) headers.Origin = a.origin;
  const childEnv = (base) => ({ ...base, PMCP_KEY: key });
  let negotiated;
  // The server's stderr is kept (and passed on) so that a refused start can
  // be told apart from a broken one.
  const keepStderr = (transport) => {
    transport.stderr?.on("data", (b) => {
      if (serverStderr.length < 65536) serverStderr += b.toString();
      process.stderr.write(b);
    });
    return transport;
  };

  if (opt.sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const transport = opt.transport === "stdio"
      ? keepStderr(new StdioClientTransport({ command: opt.command, args: opt.arg, env: childEnv(getDefaultEnvironment()), stderr: "pipe" }))
      : new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } });
    // The v1 client tells the transport the negotiated version; listen in.
    const setVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => { negotiated = v; setVersion?.(v); };
    const client = new Client({ name: "pmcp-e2e-sdk-v1", version: "1.0.0" });
    await client.connect(transport, { timeout });
    return {
      client,
      era: () => ({ era: "legacy", protocolVersion: negotiated }),
      callTool: (name, args, onprogress) =>
        client.callTool({ name, arguments: args }, undefined, { timeout, ...(onprogress ? { onprogress } : {}) }),
    };
  }

  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/client/stdio");
  const transport = opt.transport === "stdio"
    ? keepStderr(new StdioClientTransport({ command: opt.command, args: opt.arg, env: childEnv(getDefaultEnvironment()), stderr: "pipe" }))
    : new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers } });
  const client = new Client({ name: "pmcp-e2e-sdk-v2", version: "2.0.0" }, { versionNegotiation: negotiationOption(opt.negotiation) });
  await client.connect(transport, { timeout });
  return {
    client,
    era: () => ({ era: client.getProtocolEra(), protocolVersion: client.getNegotiatedProtocolVersion() }),
    callTool: (name, args, onprogress) =>
      client.callTool({ name, arguments: args }, { timeout, ...(onprogress ? { onprogress } : {}) }),
  };
}

// text joins a result's text content.
const text = (res) => (res?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// call runs a tool and keeps what a user reads: the error flag, the
// structured content and the text. A protocol error is reported, not thrown.
async function call(c, name, args, onprogress) {
  try {
    const res = await c.callTool(name, args, onprogress);
    return { isError: res.isError === true, structured: res.structuredContent ?? null, text: text(res) };
  } catch (err) {
    return { protocolError: describeError(err) };
  }
}

async function listTools(c) {
  const { tools } = await c.client.listTools();
  return tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null, inputSchemaType: t.inputSchema?.type ?? null }));
}

async function operator(c, out) {
  out.server = c.client.getServerVersion() ?? null;
  out.instructions = c.client.getInstructions() ?? null;
  out.tools = await listTools(c);
  out.prompts = (await c.client.listPrompts()).prompts.map((p) => p.name);

  const search = await call(c, "proxmox_api_search", { query: "start vm" });
  out.search = { ...search, tools: (search.structured?.results ?? []).map((r) => r.tool) };

  out.describe = await call(c, "proxmox_api_describe", { tool: "post_nodes_qemu_status_start" });

  const res = await call(c, "proxmox_cluster_resources", { type: "vm" });
  out.resources = { ...res, guests: (res.structured?.data ?? []).map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, status: g.status })) };
  delete out.resources.structured;

  out.before = await call(c, "proxmox_guest_status", { vmid: 101 });
  out.start = await call(c, "proxmox_guest_power", { vmid: 101, action: "start" });
  const upid = out.start.structured?.upid;
  const progress = [];
  out.wait = upid
    ? await call(c, "proxmox_task_wait", { upid, timeout_seconds: 60 }, (p) => progress.push(p))
    : { skipped: "no UPID in the start answer" };
  out.progress = progress;
  out.after = await call(c, "proxmox_guest_status", { vmid: 101 });
  for (const k of ["before", "after"]) {
    out[k] = { isError: out[k].isError, protocolError: out[k].protocolError, status: out[k].structured?.data?.status ?? null };
  }

  const prompt = await c.client.getPrompt({ name: "proxmox_onboarding" });
  out.prompt = prompt.messages.map((m) => m.content?.text ?? "").join("\n");

  // The curated reads and the jobs, whose answers the SDK checks against
  // their output schemas (a mismatch is a protocol error).
  const curated = {
    proxmox_node_status: { node: "pve1" },
    proxmox_node_network: { node: "pve1" },
    proxmox_node_disks: { node: "pve1" },
    proxmox_ha_status: {},
    proxmox_guest_config: { vmid: 101 },
    proxmox_snapshot_list: { vmid: 101 },
    proxmox_cluster_tasks: { limit: 5 },
    proxmox_cluster_log: { limit: 5 },
    proxmox_cluster_resources: { type: ["node", "vm"] },
    proxmox_jobs: {},
  };
  out.curated = {};
  for (const [name, args] of Object.entries(curated)) {
    const r = await call(c, name, args);
    out.curated[name] = { isError: r.isError, protocolError: r.protocolError, text: (r.text ?? "").slice(0, 300), keys: Object.keys(r.structured ?? {}) };
  }

  // Resources and completion: list the templates, read a guest's summary,
  // complete a VMID.
  out.templates = (await c.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  const guest = await c.client.readResource({ uri: "proxmox://guests/101" });
  out.guest = JSON.parse(guest.contents[0].text).data ?? null;
  const ref = { type: "ref/resource", uri: "proxmox://guests/{vmid}" };
  out.completion = (await c.client.complete({ ref, argument: { name: "vmid", value: "10" } })).completion.values;
}

async function readOnly(c, out) {
  out.tools = await listTools(c);
  const search = await call(c, "proxmox_api_search", { query: "start vm" });
  out.search = { isError: search.isError, results: (search.structured?.results ?? []).map((r) => ({ tool: r.tool, method: r.method, risk: r.risk })) };
  out.power = await call(c, "proxmox_guest_power", { vmid: 101, action: "start" });
  out.apiCall = await call(c, "proxmox_api_call", { method: "POST", path: "/nodes/pve1/qemu/101/status/start" });
  const after = await call(c, "proxmox_guest_status", { vmid: 101 });
  out.after = { isError: after.isError, protocolError: after.protocolError, status: after.structured?.data?.status ?? null };
}

const out = { sdk: opt.sdk, negotiation: opt.negotiation, transport: opt.transport, scenario: opt.scenario };

// attempts makes one HTTP connection per entry of --attempts; each should
// be refused.
async function attempts() {
  out.attempts = [];
  for (const a of JSON.parse(opt.attempts)) {
    const r = { name: a.name };
    out.attempts.push(r);
    let c;
    try {
      c = await connect(a);
    } catch (err) {
      r.connected = false;
      r.connectError = describeError(err);
      continue;
    }
    r.connected = true;
    r.tools = (await listTools(c)).map((t) => t.name);
    await c.client.close();
  }
  return 0;
}

async function main() {
  if (opt.scenario === "refused" && opt.attempts) return attempts();
  let c;
  try {
    c = await connect();
  } catch (err) {
    out.connected = false;
    out.connectError = describeError(err);
    if (opt.transport === "stdio") out.serverStderr = serverStderr;
    return opt.scenario === "refused" ? 0 : 1;
  }
  out.connected = true;
  Object.assign(out, c.era());
  try {
    switch (opt.scenario) {
      case "operator":
        await operator(c, out);
        break;
      case "read-only":
        await readOnly(c, out);
        break;
      case "call":
        out.tools = (await listTools(c)).map((t) => t.name);
        out.call = await call(c, opt.tool, JSON.parse(opt.args));
        break;
      case "refused":
        // Connected although it should not have: show what was offered.
        out.tools = await listTools(c);
        break;
      default:
        throw new Error(`unknown scenario ${opt.scenario}`);
    }
    return 0;
  } catch (err) {
    out.error = { ...describeError(err), stack: err?.stack };
    return 1;
  } finally {
    try {
      await c.client.close();
    } catch {
      // the result is already known
    }
  }
}

process.exitCode = await main();
process.stdout.write(JSON.stringify(out) + "\n");
