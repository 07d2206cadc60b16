#!/usr/bin/env python3
"""One upstream's big answers against another upstream's calls (issue 17, isolation).

`sluice serve` (HTTP) in front of two sluice-fixture upstreams over stdio, `fx` and `fy`. One
client calls `fy__echo` back to back the whole time (one 2026-07-28 POST after the other) while
another calls `fx__huge_write` ROUNDS times with `shape: "objects"`: an answer of BYTES bytes of
tiny objects (`{"k":1}`, ~1.8 million values in 14 MiB), under the 16 MiB transport ceiling, a
mutation (so it passes through redaction whole rather than being refused by the read budget).

Prints the echo latencies (p50, p99, max) before the big answers and while they run, the big
calls' own latencies, and sluice's peak RSS (VmHWM). Release builds. Not part of the test suite.

With `--requests`, the big messages are the client's instead: each round sends BYTES of tiny
objects in a request's params as a legacy POST without a session (refused), a modern
`tools/list` (answered by sluice), a modern `fx__echo` call whose arguments hold them
(forwarded), and eight `fx__echo` calls at once with a plain text of BYTES; for each, how far
sluice's resident memory rises (VmHWM reset through /proc/PID/clear_refs, against VmRSS before),
and the `fy__echo` latencies meanwhile.

    scripts/bench-isolation.py [--sluice BIN] [--fixture BIN] [--bytes N] [--rounds N]
                               [--requests [--kind N]]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench-isolation", "version": "0"}}


def call(port: int, tool: str, arguments: dict, rid: int, timeout: float = 120) -> float:
    """One tools/call; its latency in ms. Raises unless the answer is a result."""
    return post(port, "tools/call", {"name": tool, "arguments": arguments}, rid, timeout)


def post(port: int, method: str, params: dict, rid: int, timeout: float = 120,
         modern: bool = True, expect: bytes = b'"result"') -> float:
    """One request (2026-07-28 unless `modern` is false); its latency in ms. Raises unless the
    answer holds `expect`."""
    return send(port, *encode(method, params, rid, modern), expect, timeout)


def encode(method: str, params: dict, rid: int, modern: bool = True) -> tuple[bytes, dict]:
    """A request's body and headers."""
    if modern:
        params = {**params, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                      separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if modern:
        headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})
        if "name" in params:
            headers["Mcp-Name"] = params["name"]
    return body, headers


def send(port: int, body: bytes, headers: dict, expect: bytes = b'"result"',
         timeout: float = 120) -> float:
    """POSTs `body`; the latency in ms. Raises unless the answer holds `expect`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    start = time.perf_counter()
    try:
        conn.request("POST", "/mcp", body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    took = (time.perf_counter() - start) * 1000
    if expect not in data[:4096] and expect not in data[-4096:]:
        raise RuntimeError(f"HTTP {resp.status} {data[:300]!r}")
    return took


def kib(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(field + r":\s+(\d+)", status).group(1))


def big_requests(port: int, pid: int, size: int, rounds: int, only: int | None) -> None:
    """The client's big messages, one kind at a time; prints each kind's RSS rise and latency."""
    tiny = [{"k": 1}] * (size // len('{"k":1},'))
    # Encoded once, beforehand: the latencies are sluice's, not the encoder's.
    refused = encode("tools/call", {"name": "fx__echo", "a": tiny}, 2, modern=False)
    listed = encode("tools/list", {"a": tiny}, 3)
    forwarded = encode("tools/call", {"name": "fx__echo", "arguments": {"text": "x", "a": tiny}}, 4)
    plain = encode("tools/call", {"name": "fx__echo", "arguments": {"text": "x" * size}}, 5)

    def eight() -> float:
        threads = [threading.Thread(target=send, args=(port, *plain)) for _ in range(8)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return (time.perf_counter() - start) * 1000

    kinds = [
        ("legacy POST without a session (refused)", 1,
         lambda: send(port, *refused, expect=b'"error"')),
        ("`tools/list` (answered by sluice)", 1, lambda: send(port, *listed)),
        ("`fx__echo`, the objects in its arguments (forwarded)", 1, lambda: send(port, *forwarded)),
        ("eight `fx__echo` at once, a plain text each (answered with it)", 8, eight),
    ]
    print(f"sluice; requests of {size} bytes, {rounds} rounds")
    print("| request | RSS rise MiB (max of rounds) | x the messages' size | ms (median) |\n"
          "|---|---|---|---|")
    for i, (name, messages, run) in enumerate(kinds, 1):
        if only not in (None, i):
            continue
        rises, took = [], []
        for _ in range(rounds):
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            before = kib(pid, "VmRSS")
            took.append(run())
            rises.append(kib(pid, "VmHWM") - before)
        rise = max(rises) / 1024
        ratio = rise * 1024 * 1024 / (size * messages)
        print(f"| {name} | {rise:.1f} | {ratio:.2f} | {statistics.median(took):.0f} |")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def row(name: str, xs: list[float]) -> str:
    return f"| {name} | {len(xs)} | {statistics.median(xs):.2f} | {pct(xs, 99):.2f} | {max(xs):.2f} |"


def echo_loop(port: int, out: str) -> None:
    """Calls `fy__echo` back to back until terminated; writes `start latency_ms` lines."""
    with open(out, "w", encoding="utf-8", buffering=1) as f:
        rid = 100
        while True:
            rid += 1
            at = time.time()
            f.write(f"{at} {call(port, 'fy__echo', {'text': 'ping'}, rid)}\n")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--echo-loop":
        echo_loop(int(sys.argv[2]), sys.argv[3])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default=str(REPO / "target/release/sluice"))
    ap.add_argument("--fixture", default=str(REPO / "target/release/sluice-fixture"))
    ap.add_argument("--bytes", type=int, default=14 * 1024 * 1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", action="store_true")
    ap.add_argument("--kind", type=int, help="with --requests: only the Nth kind (1 to 4)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-isolation."))
    (work / "sluice.toml").write_text(
        "[ratelimit]\ndefault = \"off\"\n"
        f"[[upstream]]\nname = \"fx\"\ncommand = \"{args.fixture}\"\n"
        f"[[upstream]]\nname = \"fy\"\ncommand = \"{args.fixture}\"\n", encoding="utf-8")
    log = open(work / "sluice.log", "w+", encoding="utf-8")
    proc = subprocess.Popen([args.sluice, "serve", "--config", str(work / "sluice.toml"),
                             "--listen", "127.0.0.1:0"], stderr=log, stdout=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(200):
            log.seek(0)
            if m := re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", log.read()):
                port = int(m.group(1))
                break
            time.sleep(0.05)
        assert port, "sluice did not start"
        # Both upstreams ready (their first call waits for the catalogs).
        for tool in ("fx__echo", "fy__echo"):
            call(port, tool, {"text": "warm"}, 1)
        # The echo client is its own process: in this one, reading a 14 MiB answer would hold
        # the interpreter lock and stall the echoes it measures.
        out = work / "echoes.txt"
        echo = subprocess.Popen([sys.executable, __file__, "--echo-loop", str(port), str(out)])
        time.sleep(3.0)
        big: list[float] = []
        big_start = time.time()
        if args.requests:
            big_requests(port, proc.pid, args.bytes, args.rounds, args.kind)
        else:
            for i in range(args.rounds):
                big.append(call(port, "fx__huge_write", {"bytes": args.bytes, "shape": "objects"},
                                10 + i))
        big_end = time.time()
        echo.terminate()
        echo.wait(30)
        echoes = [tuple(map(float, line.split())) for line in out.read_text().splitlines() if line.strip()]
        if args.requests:
            during = [ms for at, ms in echoes if big_start <= at < big_end]
            print("| calls | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
            print(row("fy__echo while the client's big requests run", during))
            return 0
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) // 1024
        before = [ms for at, ms in echoes if at < big_start]
        during = [ms for at, ms in echoes if big_start <= at < big_end]
        print(f"sluice {args.sluice}; {args.rounds} answers of {args.bytes} bytes of tiny objects")
        print("| calls | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
        print(row("fy__echo before the big answers", before))
        print(row("fy__echo while fx answers", during))
        print(row("fx__huge_write (objects)", big))
        print(f"peak RSS (VmHWM): {hwm} MiB")
        return 0
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
