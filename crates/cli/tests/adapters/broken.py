"""An adapter that answers hello and then breaks the protocol as its argument says, for the
tests of locksim real's adapter errors (docs/adapters.md): crash, garbage, out-of-turn,
hang, error; or, with wrong-address, keeps a connection to the server that it bound to
127.0.0.1 itself (so the shim leaves it alone) and answers every acquire with a fail."""
import json
import socket
import sys
import time

mode = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "hello":
        if mode == "wrong-address":
            s = req["servers"][0]
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.connect((s["host"], s["port"]))
        print(json.dumps({"id": req["id"], "ok": True, "library": "broken", "version": mode}), flush=True)
        continue
    if mode == "wrong-address":
        print(json.dumps({"id": req["id"], "fail": "held"}), flush=True)
        continue
    print(f"broken adapter: {mode} at request {req['id']}", file=sys.stderr, flush=True)
    if mode == "crash":
        sys.exit(3)
    elif mode == "garbage":
        print("this is not JSON", flush=True)
    elif mode == "out-of-turn":
        print(json.dumps({"id": req["id"] + 1, "ok": True}), flush=True)
    elif mode == "hang":
        time.sleep(3600)
    elif mode == "error":
        print(json.dumps({"id": req["id"], "error": "boom"}), flush=True)
