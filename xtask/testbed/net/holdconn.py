#!/usr/bin/env python3
"""A TCP connection held open across a save/restore or migration of the router.

`holdconn.py run HOST PORT LOG` connects to the responder (responder.py echoes every
line on a TCP connection), then sends a numbered line every 0.2 s and reads its echo,
appending one line per exchange to LOG (`ok N T`, T the monotonic time it came back)
until it is killed or the connection fails (`error WHAT T`). A scenario runs it in
the background (`&`), moves the router, then asks `holdconn.py report LOG [WAIT]` (WAIT: seconds to wait for an echo within
the last second, as the client's TCP may be backing off its retransmissions):

    held: yes|no (no error line, and an echo in the last second)
    echoes: N
    last echo: S s ago
    gaps over 1 s: S S ... (between two echoes: each move's downtime seen from the LAN,
                           with the client's TCP retransmission backoff in it)
    udp gaps over 1 s: S S ... (between two answers to UDP probes sent every 0.1 s
                           through the router: the outage itself)
    last error: ... | none
"""
import socket
import sys
import threading
import time


def probe(host, port, out):
    """UDP probes to the responder every 0.1 s, each answer logged (`udp N T`): the
    outage of a move without TCP's retransmission backoff in it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    s.settimeout(0.1)
    n = 0
    while True:
        n += 1
        try:
            s.send(b'probe %d\n' % n)
            while True:
                data = s.recv(2048)
                if data.rstrip().endswith(b'said probe %d' % n):
                    out.write('udp %d %.3f\n' % (n, time.monotonic()))
                    break
        except OSError:
            pass
        time.sleep(0.1)


def run(host, port, path):
    out = open(path, 'a', buffering=1)
    threading.Thread(target=probe, args=(host, port, out), daemon=True).start()
    try:
        s = socket.create_connection((host, port), timeout=10)
        # long enough for the retransmission backoff of a connection across a
        # save and restore (its timer doubles while the router is away)
        s.settimeout(300)
        f = s.makefile('rwb', buffering=0)
        first = f.readline()
        out.write('hello %s %.3f\n' % (first.decode('latin-1').strip(), time.monotonic()))
        n = 0
        while True:
            n += 1
            f.write(b'tick %d\n' % n)
            line = f.readline()
            if not line:
                out.write('error closed-by-peer %.3f\n' % time.monotonic())
                return
            if line.strip() != b'tick %d' % n:
                out.write('error bad-echo %r %.3f\n' % (line[:40], time.monotonic()))
                return
            out.write('ok %d %.3f\n' % (n, time.monotonic()))
            time.sleep(0.2)
    except OSError as e:
        out.write('error %s %.3f\n' % (type(e).__name__, time.monotonic()))


def read(path):
    oks = []
    udp = []
    err = None
    for line in open(path, errors='replace'):
        f = line.split()
        if f and f[0] == 'ok':
            oks.append(float(f[-1]))
        elif f and f[0] == 'udp':
            udp.append(float(f[-1]))
        elif f and f[0] == 'error':
            err = ' '.join(f[1:-1])
    return oks, udp, err


def gaps(times):
    return ' '.join('%.1f' % (b - a) for a, b in zip(times, times[1:]) if b - a > 1.0)


def report(path, wait):
    # After a move the client's TCP may be in retransmission backoff (its timer
    # doubles while the router is away): give the next echo up to `wait` seconds.
    end = time.monotonic() + wait
    while True:
        oks, udp, err = read(path)
        if err or (oks and time.monotonic() - oks[-1] <= 1.0) or time.monotonic() >= end:
            break
        time.sleep(0.2)
    ago = time.monotonic() - oks[-1] if oks else float('inf')
    print('held: %s' % ('no' if err or ago > 1.0 else 'yes'))
    print('echoes: %d' % len(oks))
    print('last echo: %.1f s ago' % ago)
    print('gaps over 1 s: %s' % gaps(oks))
    print('udp gaps over 1 s: %s' % gaps(udp))
    print('last error: %s' % (err or 'none'))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'run':
        run(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == 'report':
        report(sys.argv[2], float(sys.argv[3]) if len(sys.argv) == 4 else 0.0)
    else:
        sys.exit('usage: holdconn.py run HOST PORT LOG | report LOG [WAIT_SECONDS]')
