"""The JavaScript side of the Deno host (engine/code/deno.py): the main module Deno runs.

It is kept as text here (not a ``.js`` file) so an installed wheel needs no package data.
``{USER}`` is replaced by the user module's file name (``user.ts`` or ``user.js``): imported by
a literal specifier, so the import needs no read permission.

What it does, in order (the order is the security of the protocol):

1. opens the request channel (a FIFO whose path is ``Deno.args[0]``, the only thing the process
   may write) and then *revokes* that write permission, so the user's code, which has not run
   yet, can never open it: lines a script prints go to stdout and are only ever log text;
2. reads the host's ``start`` message (``{"type": "start", "methods": [...], "arguments":
   [...]}``) from stdin, where the host also writes its replies (``{"id", "result"}`` or
   ``{"id", "error"}``);
3. imports the user module (its top-level code runs now), takes its default export (the
   entry function) and calls it with ``(api, ...arguments)``, where each method of ``api``
   sends ``{"type": "call", "id", "method", "args"}`` on the channel and awaits the reply;
4. sends ``{"type": "result", "value"}`` (the value checked to be plain JSON) or
   ``{"type": "error", "name", "message", "line"}`` (``line`` in the user module, from the
   error's stack), and exits.
"""

from __future__ import annotations

__all__ = ["HARNESS"]

HARNESS = r"""
const channelPath = Deno.args[0];
const userUrl = new URL("./{USER}", import.meta.url).href;
const stringify = JSON.stringify;
const parse = JSON.parse;
const encoder = new TextEncoder();
const channel = Deno.openSync(channelPath, { write: true });
Deno.permissions.revokeSync({ name: "write", path: channelPath });

function send(message) {
  const data = encoder.encode(stringify(message) + "\n");
  let offset = 0;
  while (offset < data.length) offset += channel.writeSync(data.subarray(offset));
}

let finished = false;
function finish(message) {
  if (finished) return;
  finished = true;
  try { send(message); } catch (_) { /* the host is gone */ }
  Deno.exit(0);
}

function escapeRe(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }
const lineRe = new RegExp(escapeRe(userUrl) + ":(\\d+):(\\d+)");
const urlRe = new RegExp("\\s*(at )?" + escapeRe(userUrl) + ":\\d+:\\d+", "g");

function failure(err) {
  let name = "Error", message, stack = "";
  if (err instanceof Error) {
    name = err.name || "Error";
    message = String(err.message);
    stack = String(err.stack || "");
  } else {
    try { message = typeof err === "string" ? err : stringify(err); } catch (_) { message = String(err); }
    if (message === undefined) message = String(err);
  }
  const found = lineRe.exec(message) || lineRe.exec(stack);
  return {
    type: "error",
    name,
    message: message.replace(urlRe, "").trim(),
    line: found ? Number(found[1]) : null,
  };
}

class NotJson extends Error {}
function checkJson(value, path, seen) {
  if (value === null || value === undefined) return;
  const kind = typeof value;
  if (kind === "string" || kind === "boolean") return;
  if (kind === "number") {
    if (!Number.isFinite(value)) throw new NotJson(`${path} is ${value}`);
    return;
  }
  if (kind === "function" || kind === "symbol" || kind === "bigint") throw new NotJson(`${path} is a ${kind}`);
  if (typeof value.toJSON === "function") return;
  if (seen.has(value)) throw new NotJson(`${path} refers to itself`);
  seen.add(value);
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkJson(item, `${path}[${i}]`, seen));
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (value.constructor && value.constructor.name) || "object";
      throw new NotJson(`${path} is a ${name}`);
    }
    for (const key of Object.keys(value)) checkJson(value[key], `${path}.${key}`, seen);
  }
  seen.delete(value);
}

const pending = new Map();
let nextId = 1;
let started;
const start = new Promise((resolve) => { started = resolve; });

async function readReplies() {
  const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 1);
      if (!line.trim()) continue;
      const message = parse(line);
      if (message.type === "start") { started(message); continue; }
      const waiter = pending.get(message.id);
      if (!waiter) continue;
      pending.delete(message.id);
      if ("error" in message) waiter.reject(new Error(String(message.error)));
      else waiter.resolve(message.result);
    }
  }
}

globalThis.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  finish(failure(event.reason));
});
globalThis.addEventListener("error", (event) => {
  event.preventDefault();
  finish(failure(event.error));
});

readReplies().catch((err) => finish(failure(err)));
const setup = await start;

function bridge(method) {
  return (...args) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    let text;
    try { text = stringify(args); } catch (err) { pending.delete(id); reject(err); return; }
    send({ type: "call", id, method, args: parse(text === undefined ? "[]" : text) });
  });
}
const api = Object.freeze(Object.fromEntries((setup.methods || []).map((m) => [m, bridge(m)])));

try {
  const module = await import("./{USER}");
  const entry = module.default;
  if (typeof entry !== "function") {
    finish({ type: "error", name: "Error", message: setup.missing || "the script defines no function to run", line: null });
  }
  const value = await entry(api, ...(setup.arguments || []));
  try {
    checkJson(value, "the result", new Set());
  } catch (err) {
    if (err instanceof NotJson) {
      finish({ type: "error", name: "TypeError", message: `the value returned is not JSON-serialisable: ${err.message}`, line: null, notJson: true });
    }
    throw err;
  }
  finish({ type: "result", value: value === undefined ? null : value });
} catch (err) {
  finish(failure(err));
}
"""
