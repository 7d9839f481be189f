"""locksim adapter (docs/adapters.md, protocol 1) for python-redis-lock, on one Redis server
(algorithm "central").

Library: python-redis-lock (PyPI "python-redis-lock", module redis_lock, pinned in
adapters/requirements.txt) over redis-py: SET lock:NAME id NX EX seconds to acquire, a Lua
compare-and-delete (plus an RPUSH to wake blocked waiters) to release.
WHOLE SECONDS ONLY: Lock(expire=...) does int(expire) and sends EX, so 1.5 s would silently
become 1 s and 0.5 s an invalid 0. A ttl_ms that is not a positive multiple of 1000 is
answered with `error` (locksim refuses such files before the run; this is a safety net).
Calls:
  hello    r = redis.Redis(host, port, socket_timeout=t, socket_connect_timeout=t,
                           retry_on_timeout=False)   t = timeout_ms/1000 (None: no timeout);
           lazy: the first command connects; redis-py 5 retries nothing.
  acquire  lock = redis_lock.Lock(r, "locksim:{key}", expire=ttl_ms // 1000, auto_renewal=False)
           lock.acquire(blocking=False)       the Redis key is "lock:locksim:{key}"
  release  lock.release()                     on the lock acquired last on the key
Answers:
  acquire True -> ok; False -> fail (the key is held by another)
  release None -> ok; redis_lock.NotAcquired ("not acquired or it already expired": no longer
  ours, or released already) -> fail, its words
  any redis.exceptions.RedisError (timeout, connection error) -> info
  release on a key never acquired -> fail; a ttl it cannot express, an unknown op -> error
No token, no validity: the client holds until ttl_ms after it asked.
"""
import importlib.metadata
import json
import sys

import redis
import redis.exceptions
import redis_lock


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
                answer({"id": rid, "ok": True, "library": "python-redis-lock",
                        "version": importlib.metadata.version("python-redis-lock")})
            elif op == "acquire":
                ttl_ms = req["ttl_ms"]
                if ttl_ms <= 0 or ttl_ms % 1000:
                    answer({"id": rid, "error": f"ttl {ttl_ms} ms: python-redis-lock's expire "
                            "takes whole seconds (int(expire)), give a ttl of N s"})
                    continue
                lock = redis_lock.Lock(conn, f"locksim:{req['key']}", expire=ttl_ms // 1000,
                                       auto_renewal=False)
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
        except redis_lock.NotAcquired as e:
            answer({"id": rid, "fail": f"{type(e).__name__}: {e}"})
        except redis.exceptions.RedisError as e:
            answer({"id": rid, "info": f"{type(e).__name__}: {e}"})
        except Exception as e:  # a bug here or in the library: the run cannot go on
            answer({"id": rid, "error": f"{type(e).__name__}: {e}"})


main()
