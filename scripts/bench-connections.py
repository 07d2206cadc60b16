#!/usr/bin/env python3
"""Floods sluice's HTTP listener as a hostile client would, and reports what
it held and for how long. Not part of the test suite (the behaviours are
tested in crates/sluice-cli/tests/connections.rs); this gives the figures
in BENCHMARKS.md.

    scripts/bench-connections.py [--sluice target/debug/sluice]
        [--fixture target/debug/sluice-fixture] [--slowloris 200]
        [--idle 10000] [--watch 40]

1. slowloris: N connections each send half a request head, then nothing;
   every 2 s, how many are still open (until all are closed or --watch s).
2. idle flood: N connections from 127.0.0.1 that send nothing: how many
   sluice holds and how many it refuses (503); then, from 127.0.0.2, the
   time of a /health request, and a tool call after the upstream crashed
   (its respawn needs descriptors the flood must not have taken).

Defaults are sluice's ([server.connections]); the client needs about
--idle + 100 descriptors (the script raises its own soft limit).
"""

import argparse
import json
import os
import resource
import selectors
import socket
import sys
import tempfile
import time

from sluice_serve import serve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(sluice, fixture, workdir):
    config = f'[[upstream]]\nname = "fx"\ncommand = "{fixture}"\ntrusted = true\n'
    return serve(sluice, config, workdir)


def connect(addr, source="127.0.0.1"):
    s = socket.socket()
    s.bind((source, 0))
    s.connect(addr)
    return s


def open_count(socks):
    """How many of socks the peer has not closed (reading without blocking)."""
    alive = 0
    for s in socks:
        if s.fileno() < 0:
            continue
        s.setblocking(False)
        try:
            data = s.recv(4096)
            if data == b"":
                s.close()
                continue
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        alive += 1
    return alive


def slowloris(addr, n, watch):
    socks = []
    for _ in range(n):
        s = connect(addr)
        s.sendall(f"POST /mcp HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\nX-Half".encode())
        socks.append(s)
    t0 = time.monotonic()
    seen = []
    while True:
        alive = open_count(socks)
        elapsed = time.monotonic() - t0
        seen.append((round(elapsed), alive))
        if alive == 0 or elapsed > watch:
            break
        time.sleep(2)
    for s in socks:
        s.close()
    return seen


def idle_flood(addr, n):
    held, refused, dropped = [], 0, 0
    socks = [connect(addr) for _ in range(n)]
    time.sleep(2)
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    ready = {key.fileobj for key, _ in sel.select(timeout=1)}
    for s in socks:
        if s in ready:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
            else:
                dropped += 1
            s.close()
        else:
            held.append(s)
    return held, refused, dropped


def post(addr, body, source="127.0.0.2"):
    s = connect(addr, source)
    data = json.dumps(body).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        f"Mcp-Method: tools/call\r\nMcp-Name: {body['params']['name']}\r\n"
        f"Connection: close\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    s.sendall(head.encode() + data)
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    return json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"null")


def health(addr, source="127.0.0.2"):
    s = connect(addr, source)
    s.sendall(f"GET /health HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\nConnection: close\r\n\r\n".encode())
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    return answer.split(b"\r\n", 1)[0].decode()


def call(name, rid):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "flood", "version": "0"},
    }
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": {"text": "back"}, "_meta": meta},
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sluice", default=os.path.join(ROOT, "target/debug/sluice"))
    p.add_argument("--fixture", default=os.path.join(ROOT, "target/debug/sluice-fixture"))
    p.add_argument("--slowloris", type=int, default=200)
    p.add_argument("--idle", type=int, default=10000)
    p.add_argument("--watch", type=int, default=40)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as workdir:
        child, addr = start(a.sluice, a.fixture, workdir)
        try:
            time.sleep(1)
            print(f"slowloris x{a.slowloris}: (seconds, still open):", slowloris(addr, a.slowloris, a.watch))
            held, refused, dropped = idle_flood(addr, a.idle)
            print(
                f"idle flood x{a.idle} from 127.0.0.1: held {len(held)}, refused with 503: {refused}, "
                f"closed without an answer: {dropped}"
            )
            t0 = time.monotonic()
            status = health(addr)
            print(f"/health from 127.0.0.2 during the flood: {status} in {1000 * (time.monotonic() - t0):.1f} ms")
            crashed = post(addr, call("fx__crash", 1))
            print("crash:", crashed.get("error", {}).get("code"))
            t0 = time.monotonic()
            for rid in range(2, 300):
                answer = post(addr, call("fx__echo", rid))
                if "result" in answer:
                    break
                time.sleep(0.1)
            print(f"after the respawn: {answer.get('result', answer)} in {time.monotonic() - t0:.1f} s")
            for s in held:
                s.close()
        finally:
            child.terminate()
            child.wait()


if __name__ == "__main__":
    sys.exit(main())
