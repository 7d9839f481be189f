/* locksim adapter (docs/adapters.md, protocol 1) for node-redlock, on five Redis masters
 * (algorithm "redlock").
 *
 * Library: npm "redlock" 5.0.0-beta.2 (its package.json says "v5.0.0-beta.2") over npm
 * "ioredis" 5.4.1: one Lua script per master (EXISTS, then SET key value PX ttl) sent to all
 * at once; granted as soon as a majority said yes, refused as soon as a majority said no
 * (a Redis error counts as no), then a release round is sent to clean up a refusal.
 * Calls:
 *   hello    clients = servers.map(s => new Redis({host, port, connectTimeout: t,
 *              commandTimeout: t, maxRetriesPerRequest: 0, enableOfflineQueue: false,
 *              autoResendUnfulfilledCommands: false, retryStrategy: () => 100}))
 *              t = timeout_ms: a request answers within t ("Command timed out"); nothing is
 *              queued while a master is down or resent after a reconnect, which ioredis
 *              retries every 100 ms forever. hello waits (<= 8 s) until a majority is ready.
 *            redlock = new Redlock(clients, {retryCount: 0, driftFactor: 0.01})
 *   acquire  lock = await redlock.acquire(["locksim:{key}"], ttl_ms)   one attempt
 *   release  await lock.release()                the lock acquired last on the key
 * Answers:
 *   acquire resolves -> ok, validity_ms = lock.expiration - Date.now(), where expiration =
 *     start + ttl - (round(0.01 ttl) + 2): redlock does not check it is positive, so a slow
 *     grant is returned already expired (validity_ms <= 0); no token.
 *   release resolves -> ok
 *   ExecutionError (no majority for): the per-master votes (error.attempts, promises of
 *     stats; awaited until every master answered or timed out). fail when at least a majority
 *     were certainly not applied: ResourceLockedError ("applied to 0 of the 1": held by
 *     another, or for a release no longer ours) or ioredis's "Stream isn't writeable" (not
 *     sent); else info (a timeout or a closed connection: the script may have run).
 *   release on a key never acquired -> fail; an unknown op, any other exception -> error
 */
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const Redis = require("ioredis");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");

// redlock's "exports" hides its package.json from require(): read the file itself.
const VERSION = JSON.parse(fs.readFileSync(
  path.join(path.dirname(require.resolve("redlock")), "..", "..", "package.json"))).version;
const IOREDIS = JSON.parse(fs.readFileSync(
  path.join(path.dirname(require.resolve("ioredis")), "..", "package.json"))).version;

const answer = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const words = (e) => `${e.name}: ${e.message}`;

// Certainly not applied on that master: the script refused, or the request was never sent.
const notApplied = (e) => e instanceof ResourceLockedError ||
  e.message.startsWith("Stream isn't writeable");

async function quorumError(rid, e) {
  const stats = await Promise.all(e.attempts);
  let sure = 0, quorum = 3;
  const seen = new Map(); // the masters' errors, counted
  for (const s of stats) {
    quorum = s.quorumSize;
    for (const err of s.votesAgainst.values()) {
      if (notApplied(err)) sure++;
      seen.set(words(err), (seen.get(words(err)) || 0) + 1);
    }
  }
  const why = `${words(e)} [${[...seen].map(([w, n]) => `${n} x ${w}`).join("; ")}]`;
  answer(sure >= quorum ? { id: rid, fail: why } : { id: rid, info: why });
}

async function main() {
  let redlock = null;
  const locks = new Map();
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    const rid = req.id;
    try {
      if (req.op === "hello") {
        const t = req.timeout_ms == null ? undefined : req.timeout_ms;
        const clients = req.servers.map((s, i) => {
          const c = new Redis({ host: s.host, port: s.port, connectTimeout: t ?? 10000,
            commandTimeout: t, maxRetriesPerRequest: 0, enableOfflineQueue: false,
            autoResendUnfulfilledCommands: false, retryStrategy: () => 100 });
          let last = "";
          c.on("error", (e) => { // logged once per new message, never thrown
            if (e.message !== last) console.error(`ioredis n${i + 1}: ${words(e)}`);
            last = e.message;
          });
          c.on("ready", () => { last = ""; });
          return c;
        });
        const ready = await Promise.all(clients.map((c) => new Promise((ok) => {
          if (c.status === "ready") return ok(1);
          const timer = setTimeout(() => ok(0), 8000);
          c.once("ready", () => { clearTimeout(timer); ok(1); });
        })));
        const n = ready.reduce((a, b) => a + b, 0);
        console.error(`redlock ${VERSION}, ioredis ${IOREDIS}: ${n} of ${clients.length} ready`);
        if (n < Math.floor(clients.length / 2) + 1) {
          answer({ id: rid, error: `only ${n} of ${clients.length} Redis masters ready in 8 s` });
          continue;
        }
        redlock = new Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
        answer({ id: rid, ok: true, library: "redlock", version: VERSION });
      } else if (req.op === "acquire") {
        const lock = await redlock.acquire([`locksim:${req.key}`], req.ttl_ms);
        locks.set(req.key, lock);
        answer({ id: rid, ok: true, validity_ms: lock.expiration - Date.now() });
      } else if (req.op === "release") {
        const lock = locks.get(req.key);
        if (!lock) {
          answer({ id: rid, fail: "no lock acquired on this key" });
          continue;
        }
        await lock.release();
        answer({ id: rid, ok: true });
      } else {
        answer({ id: rid, error: `unknown op ${req.op}` });
      }
    } catch (e) {
      if (e instanceof ExecutionError) await quorumError(rid, e);
      else answer({ id: rid, error: words(e) }); // a bug here or in the library
    }
  }
  if (redlock) redlock.clients.forEach((c) => c.disconnect());
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
