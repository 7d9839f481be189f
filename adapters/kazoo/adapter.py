"""locksim adapter (docs/adapters.md, protocol 1) for kazoo's Lock recipe, on a ZooKeeper
ensemble (algorithm "zookeeper").

Library: kazoo (PyPI "kazoo", 2.11.0), kazoo.recipe.lock.Lock: an ephemeral-sequential znode
PATH/<uuid>__lock__NNNNNNNNNN; the lowest sequence number holds; release deletes it.
Calls:
  hello    zk = KazooClient(hosts="h1:p1,...", timeout=ttl_ms/1000 (the session timeout),
             command_retry=KazooRetry(max_tries=1) (release()'s delete: no retry),
             connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2))
           zk.start(timeout=8): hello waits for a session, else error
  acquire  lock = zk.Lock("/locksim/kazoo-{key}"), kept per key (its uuid prefix lets a later
           acquire adopt a znode whose create answer was lost); kazoo makes the path.
           lock.acquire(blocking=True, timeout=0): ONE attempt (blocking=False retries
           ConnectionLoss/SessionExpired forever; with timeout=0 it is a ValueError).
           token = int(lock.node[-10:]), the znode's sequence number; no validity.
  release  lock.release()                     the Lock acquired last on the key
kazoo has no request timeout (a request to a stopped server fails when a ping goes unanswered,
~2/3 of the session timeout) and holds requests made while SUSPENDED (acquire's clean-up too)
until it reconnects. So an op waits <= timeout_ms for a session, runs in a thread, and is
answered info if not done in 2 x timeout_ms (a late acquire then releases at once).
Answers:
  acquire True -> ok + token; LockTimeout (a lower znode holds) -> fail; False (its retry gave
    up at a ConnectionLoss/SessionExpired) -> info
  no session within timeout_ms, Lock.is_acquired already, no lock on the key -> fail
  release True -> ok; False -> fail. If the acquire's session had ended before the release
    (KazooState.LOST or a new session id: ZooKeeper deleted the znode; kazoo does not know:
    is_acquired stays True, release() returns True, NoNodeError swallowed) -> fail. If it
    ends during the release, or the release raises a KazooException -> info: the delete went
    out on the old session and may have landed before it ended (a one-way partition lets
    requests arrive; answering fail there was S3 in 1 of 5 runs)
  other KazooException (RetryFailedError, ...) -> info; an unknown op, a bug -> error
"""
import concurrent.futures
import importlib.metadata
import json
import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry


def run(op, key):  # in a worker thread
    try:
        if not connected():
            return {"fail": f"not connected ({zk.state}): nothing sent"}
        return (acquire if op == "acquire" else release)(key)
    except LockTimeout as e:
        return {"fail": f"held: {type(e).__name__}: {e}"}
    except KazooException as e:
        return {"info": f"{type(e).__name__}: {e}"}
    except Exception as e:  # a bug here or in the library: the run cannot go on
        return {"error": f"{type(e).__name__}: {e}"}


def acquire(key):
    lock = (entry := locks[key])[0]
    if lock.is_acquired:
        return {"fail": "Lock.is_acquired already (not re-entrant): nothing sent"}
    if not lock.acquire(blocking=True, timeout=0):
        return {"info": "acquire(timeout=0) returned False: its retry gave up at a "
                "connection loss or session expiry"}
    cid = zk.client_id
    entry[1:] = [cid[0] if cid else -1, lost[0]]
    return {"ok": True, "token": int(lock.node[-10:])}


def release(key):
    lock, sid, gen = locks[key]
    if sid is None:
        return {"fail": "no lock acquired on this key"}
    before = ended(sid, gen)  # the session had ended already: the delete goes on a new one
    try:
        said, err = f"lock.release() returned {lock.release()}", None
    except KazooException as e:
        said = err = f"lock.release() raised {type(e).__name__}: {e}"
        connected()
    if before:
        return {"fail": f"session 0x{sid:x} had ended before the release (KazooState.LOST): "
                f"ZooKeeper deleted its znode; {said}"}
    if err or ended(sid, gen):
        # The delete went out on the acquire's session and its answer was lost: it may have
        # deleted the znode at once, before the session ended (a one-way partition lets
        # requests arrive), or not at all.
        why = err or f"session 0x{sid:x} ended during the release; {said}"
        return {"info": why}
    return {"ok": True} if said.endswith("True") else {"fail": f"{said} (not acquired)"}


def ended(sid, gen):  # has the acquire's session ended since?
    cid = zk.client_id
    return lost[0] != gen or (cid is not None and cid[0] != sid)


def connected():  # waits up to timeout_ms for a session
    end = time.monotonic() + (t if t is not None else 1e9)
    while not zk.connected and time.monotonic() < end:
        time.sleep(0.01)
    return zk.connected


def listener(state):
    print(f"kazoo: state {state}", file=sys.stderr, flush=True)
    lost[0] += state == KazooState.LOST


def answer(msg):
    print(json.dumps(msg), flush=True)


zk, t, locks, lost = None, None, {}, [0]
pool = concurrent.futures.ThreadPoolExecutor(max_workers=64)  # ops left running do not block
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    rid, op = req.get("id"), req.get("op")
    if op == "hello":
        t = None if req.get("timeout_ms") is None else req["timeout_ms"] / 1000
        zk = KazooClient(hosts=",".join(f"{s['host']}:{s['port']}" for s in req["servers"]),
                         timeout=req["ttl_ms"] / 1000, command_retry=KazooRetry(max_tries=1),
                         connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2))
        try:
            zk.start(timeout=8)
        except Exception as e:
            answer({"id": rid, "error": f"no ZooKeeper session within 8 s: {e!r}"})
            continue
        zk.add_listener(listener)
        answer({"id": rid, "ok": True, "library": "kazoo",
                "version": importlib.metadata.version("kazoo")})
    elif op in ("acquire", "release"):
        locks.setdefault(req["key"], [zk.Lock(f"/locksim/kazoo-{req['key']}"), None, 0])
        fut = pool.submit(run, op, req["key"])
        try:
            answer({"id": rid, **fut.result(t and 2 * t)})
        except concurrent.futures.TimeoutError:
            answer({"id": rid, "info": f"no answer from kazoo within {2 * t} s (state "
                    f"{zk.state}): the op may still take effect"})
            lock = locks[req["key"]][0]  # a late acquire (answered info) lets the lock go
            fut.add_done_callback(lambda f, lk=lock: "token" in f.result() and lk.release())
    else:
        answer({"id": rid, "error": f"unknown op {op}"})
if zk is not None:
    zk.stop()
os._exit(0)  # without waiting for ops left running
