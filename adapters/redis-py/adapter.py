"""locksim adapter for redis-py's Lock (redis.lock.Lock) on one Redis server.

Protocol: docs/adapters.md. Calls: redis.Redis(host, port, socket_timeout, socket_connect_timeout),
r.lock(name, timeout=ttl_s), lock.acquire(blocking=False), lock.release().
Mapping: acquire True -> ok; False -> fail (held by another); a redis error -> info.
release -> ok; LockNotOwnedError / LockError -> fail; other errors -> info.
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
        req = json.loads(line)
        rid, op = req["id"], req["op"]
        try:
            if op == "hello":
                s = req["servers"][0]
                t = req["timeout_ms"]
                t = None if t is None else t / 1000
                conn = redis.Redis(host=s["host"], port=s["port"], socket_timeout=t,
                                   socket_connect_timeout=t, retry_on_timeout=False)
                answer({"id": rid, "ok": True, "library": "redis-py",
                        "version": importlib.metadata.version("redis")})
            elif op == "acquire":
                lock = conn.lock(f"locksim:{req['key']}", timeout=req["ttl_ms"] / 1000)
                if lock.acquire(blocking=False):
                    locks[req["key"]] = lock
                    answer({"id": rid, "ok": True})
                else:
                    answer({"id": rid, "fail": "held: acquire(blocking=False) returned False"})
            elif op == "release":
                lock = locks.pop(req["key"], None)
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


main()
