#!/usr/bin/env python3
"""UDP datagrams of 1400 bytes marked DSCP LE (RFC 8622: DSCP 1, TOS byte 0x04)
to PEER port 9 at about RATE b/s (IP bytes) for SECS seconds; prints the count on
stderr. The LE load of docs/validation.md "TCP-Peach over real TCP" (what
low-priority traffic costs other flows), run inside `satcc shell`:

    scripts/le-flood.py 100.64.0.2 12e6 62
"""
import socket, sys, time
peer, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x04)
payload = b"\0" * 1400
gap = (len(payload) + 28) * 8 / rate
t0 = time.monotonic(); n = 0
while True:
    now = time.monotonic()
    if now - t0 >= secs: break
    due = t0 + n * gap
    if due > now: time.sleep(due - now)
    try: s.sendto(payload, (peer, 9))
    except OSError: pass
    n += 1
print(n, file=sys.stderr)
