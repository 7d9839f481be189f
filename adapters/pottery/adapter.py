"""locksim adapter (docs/adapters.md, protocol 1) for pottery's Redlock, on five Redis masters
(algorithm "redlock").

Library: pottery (PyPI "pottery", pinned in adapters/requirements.txt) over redis-py:
SET key uuid NX PX on every master in threads, granted once a majority said yes with
validity = ttl - (ttl*0.01 + 2 ms) - elapsed > 0; otherwise it deletes what it set.
Calls:
  hello    masters = {redis.Redis(host, port, socket_timeout=t, socket_connect_timeout=t,
                       retry_on_timeout=False) for each server}   t = timeout_ms/1000
           (lazy: each connects at its first command; redis-py 5 retries nothing)
  acquire  lock = pottery.Redlock(key="locksim:{key}", masters=masters,
                                  auto_release_time=ttl_ms/1000, raise_on_redis_errors=True)
           lock.acquire(blocking=False)       the Redis key is "redlock:locksim:{key}"
           then lock.locked(raise_on_redis_errors=False): the validity left, in SECONDS
           (its docstring says ms), from a second round of PTTL on the masters
  release  lock.release()                     on the lock acquired last on the key
Answers:
  acquire True -> ok, validity_ms = locked()*1000 (0 if the second round found no majority)
  acquire False -> fail (held by another), but info when pottery logged a RedisError from a
    master during the call (it swallows up to a minority of them and returns False)
  pottery.QuorumIsImpossible (a majority of masters raised RedisError) -> info
  release None -> ok; pottery.ReleaseUnlockedLock -> fail (no longer ours, or released
    already), info if it carries redis_errors
  release on a key never acquired -> fail; an unknown op, any other exception -> error
Slow case: when no majority answers, pottery's acquire also waits for its clean-up round,
so an `info` comes after about 2 x timeout_ms.
"""
import importlib.metadata
import json
import logging
import sys

import pottery
import redis
import redis.exceptions


class Errors(logging.Handler):
    """Counts (and copies to stderr) the RedisErrors pottery logs and swallows."""
    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        if record.exc_info:
            e = record.exc_info[1]
            self.seen.append(f"{type(e).__name__}: {e}")
            print(f"pottery: {record.getMessage()}: {self.seen[-1]}", file=sys.stderr, flush=True)


def answer(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main():
    errors = Errors()
    logging.getLogger("pottery").addHandler(errors)
    masters, locks = None, {}
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        errors.seen = []
        try:
            if op == "hello":
                t = req.get("timeout_ms")
                t = None if t is None else t / 1000
                masters = {redis.Redis(host=s["host"], port=s["port"], socket_timeout=t,
                                       socket_connect_timeout=t, retry_on_timeout=False)
                           for s in req["servers"]}
                answer({"id": rid, "ok": True, "library": "pottery",
                        "version": importlib.metadata.version("pottery")})
            elif op == "acquire":
                lock = pottery.Redlock(key=f"locksim:{req['key']}", masters=masters,
                                       auto_release_time=req["ttl_ms"] / 1000,
                                       raise_on_redis_errors=True)
                if lock.acquire(blocking=False):
                    locks[req["key"]] = lock
                    validity = lock.locked(raise_on_redis_errors=False)
                    answer({"id": rid, "ok": True, "validity_ms": validity * 1000})
                elif errors.seen:
                    answer({"id": rid, "info": f"acquire returned False after {len(errors.seen)}"
                            f" Redis error(s): {errors.seen[0]}"})
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
        except pottery.ReleaseUnlockedLock as e:
            kind = "info" if e.redis_errors else "fail"
            answer({"id": rid, kind: f"{type(e).__name__}: {e}"})
        except (pottery.QuorumIsImpossible, redis.exceptions.RedisError) as e:
            answer({"id": rid, "info": f"{type(e).__name__}: {e}"})
        except Exception as e:  # a bug here or in the library: the run cannot go on
            answer({"id": rid, "error": f"{type(e).__name__}: {e}"})


main()
