#!/usr/bin/env python3
"""A TCP and UDP responder for the router topology (xtask/testbed/net/router.sh).

`responder.py PORT` listens on PORT for TCP and UDP (IPv4, all addresses). To every
UDP datagram it answers `you are IP:PORT said WORDS` with the sender's address as it
arrived (after any NAT on the way) and the datagram's first line; to every TCP
connection it sends `you are IP:PORT`, then echoes the lines it gets until the peer
closes. Each exchange is logged on stdout: the scenario reads what source address and
port a NATed flow got from the answer and from this log.
"""
import socket
import sys
import threading


def log(msg):
    print(msg, flush=True)


def udp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('0.0.0.0', port))
    while True:
        data, peer = s.recvfrom(2048)
        said = data.decode('latin-1').split('\n')[0][:100]
        log('udp from %s:%d said %r' % (peer[0], peer[1], said))
        s.sendto(('you are %s:%d said %s\n' % (peer[0], peer[1], said)).encode(), peer)


def tcp_conn(c, peer):
    with c:
        log('tcp from %s:%d' % peer)
        c.sendall(('you are %s:%d\n' % peer).encode())
        # long enough for a held connection across a save and restore of the
        # router (suspend-router: ~30 s on the nested bed)
        c.settimeout(300)
        try:
            while True:
                data = c.recv(4096)
                if not data:
                    break
                c.sendall(data)
        except OSError:
            pass


def tcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('0.0.0.0', port))
    s.listen(16)
    while True:
        c, peer = s.accept()
        threading.Thread(target=tcp_conn, args=(c, peer), daemon=True).start()


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 7777
    threading.Thread(target=udp, args=(port,), daemon=True).start()
    log('responder listening on tcp and udp port %d' % port)
    tcp(port)


if __name__ == '__main__':
    main()
