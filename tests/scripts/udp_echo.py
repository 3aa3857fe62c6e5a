#!/usr/bin/env python3
"""A ping over UDP for the relay's test (the test machines need not have ping).

  udp_echo.py serve ADDRESS PORT            echoes every datagram back, until killed
  udp_echo.py probe ADDRESS PORT COUNT GAP  sends COUNT numbered datagrams GAP seconds apart,
                                            prints "sent N received M min_ms X median_ms Y"

A reply is matched to its datagram by number; one not back within a second is lost.
"""
import socket
import statistics
import struct
import sys
import time


def serve(address, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((address, port))
        while True:
            data, peer = s.recvfrom(2048)
            s.sendto(data, peer)


def probe(address, port, count, gap):
    rtts = {}
    sent_at = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.001)
        next_send = time.monotonic()
        number = 0
        deadline = None
        while deadline is None or time.monotonic() < deadline:
            now = time.monotonic()
            if number < count and now >= next_send:
                sent_at[number] = now
                s.sendto(struct.pack("!I", number), (address, port))
                number += 1
                next_send += gap
                if number == count:
                    deadline = now + 1.0
            try:
                data = s.recv(2048)
            except socket.timeout:
                continue
            received = time.monotonic()
            (n,) = struct.unpack("!I", data[:4])
            if n in sent_at and n not in rtts:
                rtts[n] = received - sent_at[n]
    values = sorted(rtts.values())
    print("sent %d received %d min_ms %.3f median_ms %.3f" % (
        count, len(values), 1e3 * values[0] if values else -1,
        1e3 * statistics.median(values) if values else -1))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 6 and sys.argv[1] == "probe":
        probe(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)
