#!/usr/bin/env python3
"""New TCP connections per second, for `cargo xtask bench router` (xtask/src/bench_router.rs).

`connrate.py HOST PORT SECONDS WORKERS`: WORKERS threads each open a TCP connection to
HOST:PORT (the router topology's responder, xtask/testbed/net/responder.py, which greets
every connection with `you are IP:PORT`), read the greeting, close, and start over, until
SECONDS have passed. A connection counts as made when its greeting arrived: the SYN, the
SYN-ACK and the first data crossed the router (and its NAT) both ways. Prints one line:

    connections: ok=N failed=M seconds=S workers=W

and exits 0 whatever the counts (the bench reads the figure; a scenario step only checks
that there is one).
"""
import socket
import sys
import threading
import time


def worker(host, port, deadline, counts, lock):
    ok = failed = 0
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=3) as s:
                greeting = b''
                while b'\n' not in greeting and len(greeting) < 200:
                    chunk = s.recv(200)
                    if not chunk:
                        break
                    greeting += chunk
            if greeting.startswith(b'you are '):
                ok += 1
            else:
                failed += 1
        except OSError:
            failed += 1
    with lock:
        counts[0] += ok
        counts[1] += failed


def main():
    if len(sys.argv) != 5:
        print('usage: connrate.py HOST PORT SECONDS WORKERS', file=sys.stderr)
        return 2
    host, port = sys.argv[1], int(sys.argv[2])
    seconds, workers = float(sys.argv[3]), int(sys.argv[4])
    counts = [0, 0]
    lock = threading.Lock()
    t0 = time.monotonic()
    deadline = t0 + seconds
    threads = [threading.Thread(target=worker, args=(host, port, deadline, counts, lock))
               for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the last connections may end after the deadline: the rate is over the real time
    print('connections: ok=%d failed=%d seconds=%.2f workers=%d'
          % (counts[0], counts[1], time.monotonic() - t0, workers), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
