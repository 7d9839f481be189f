"""locksim adapter (docs/adapters.md, protocol 1) for redis-py's Lock, on one Redis server
(algorithm "central").

Library: redis-py (PyPI "redis", pinned in adapters/requirements.txt), redis.lock.Lock:
SET key token NX PX ttl to acquire, a Lua compare-and-delete to release.
Calls:
  hello    r = redis.Redis(host, port, socket_timeout=t, socket_connect_timeout=t,
                           retry_on_timeout=False)   t = timeout_ms/1000 (None: no timeout);
           redis-py connects lazily, at the first command, and retries nothing (Retry(0)).
  acquire  lock = r.lock("locksim:{key}", timeout=ttl_ms/1000, blocking=False)
           lock.acquire(blocking=False)       one SET NX PX, no waiting
  release  lock.release()                     on the lock acquired last on the key
Answers:
  acquire True -> ok; False -> fail (the key is held by another)
  release None -> ok
  redis.exceptions.LockNotOwnedError (the key is no longer ours: expired, taken over) and
  LockError ("Cannot release an unlocked lock": released already) -> fail, their words
  any other RedisError (TimeoutError, ConnectionError after or while sending) -> info
  release on a key never acquired -> fail; an unknown op, any other exception -> error
No token, no validity: the client holds until ttl_ms after it asked.
"""
import importlib.metadata
import json
import sys

import redis
import redis.exceptions


def answer(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main():
    conn = None
    locks = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        try:
            if op == "hello":
                s = req["servers"][0]
                t = req.get("timeout_ms")
                t = None if t is None else t / 1000
                conn = redis.Redis(host=s["host"], port=s["port"], socket_timeout=t,
                                   socket_connect_timeout=t, retry_on_timeout=False)
                answer({"id": rid, "ok": True, "library": "redis-py",
                        "version": importlib.metadata.version("redis")})
            elif op == "acquire":
                lock = conn.lock(f"locksim:{req['key']}", timeout=req["ttl_ms"] / 1000,
                                 blocking=False)
                if lock.acquire(blocking=False):
                    locks[req["key"]] = lock
                    answer({"id": rid, "ok": True})
                else:
                    answer({"id": rid, "fail": "held: acquire(blocking=False) returned False"})
            elif op == "release":
                lock = locks.get(req["key"])
                if lock is None:
                    answer({"id": rid, "fail": "no lock acquired on this key"})
                else:
                    lock.release()
                    answer({"id": rid, "ok": True})
            else:
                answer({"id": rid, "error": f"unknown op {op}"})
        except redis.exceptions.LockError as e:
            answer({"id": rid, "fail": f"{type(e).__name__}: {e}"})
        except redis.exceptions.RedisError as e:
            answer({"id": rid, "info": f"{type(e).__name__}: {e}"})
        except Exception as e:  # a bug here or in the library: the run cannot go on
            answer({"id": rid, "error": f"{type(e).__name__}: {e}"})


main()
