#!/usr/bin/env python3
"""Writes a large history that is not linearizable, to measure `locksim check` on it.

  etcd: a Jepsen etcd log (the format of `locksim check --model etcd`) of N operations on one
        register by 5 processes, one at a time: writes and reads that fit, then a last read of
        a value never written (so the longest linearizable prefix is N - 1 operations long).
  kv:   a Porcupine EDN kv history (`--model kv`) of N operations over 10 keys, the same way.

Usage: scripts/big-history.py etcd|kv N > FILE
Then, e.g.: /usr/bin/time -v target/release/locksim check --model etcd --json FILE
"""
import sys


def etcd(n):
    value = 0
    for i in range(n - 1):
        p = i % 5
        if i % 2 == 0:
            value = i
            print(f"INFO  jepsen.util - {p}\t:invoke\t:write\t{value}")
            print(f"INFO  jepsen.util - {p}\t:ok\t:write\t{value}")
        else:
            print(f"INFO  jepsen.util - {p}\t:invoke\t:read\tnil")
            print(f"INFO  jepsen.util - {p}\t:ok\t:read\t{value}")
    print("INFO  jepsen.util - 0\t:invoke\t:read\tnil")
    print(f"INFO  jepsen.util - 0\t:ok\t:read\t{value + 1}")


def kv(n):
    held = {}
    for i in range(n - 1):
        p, key = i % 5, str(i % 10)
        if i % 2 == 0:
            print(f'{{:process {p}, :type :invoke, :f :put, :key "{key}", :value "v{i}"}}')
            print(f'{{:process {p}, :type :ok, :f :put, :key "{key}", :value "v{i}"}}')
            held[key] = f"v{i}"
        else:
            print(f'{{:process {p}, :type :invoke, :f :get, :key "{key}", :value nil}}')
            v = held.get(key)
            shown = f'"{v}"' if v is not None else '""'
            print(f'{{:process {p}, :type :ok, :f :get, :key "{key}", :value {shown}}}')
    print('{:process 0, :type :invoke, :f :get, :key "0", :value nil}')
    print('{:process 0, :type :ok, :f :get, :key "0", :value "never"}')


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("etcd", "kv"):
        sys.exit(__doc__)
    {"etcd": etcd, "kv": kv}[sys.argv[1]](int(sys.argv[2]))
