#!/usr/bin/env python3
"""CPU sluice spends per page of `tools/list`, by catalog size: sluice
serves a sluice-fixture catalog of N generated tools, a client walks every
500-row page ROUNDS times, and sluice's own CPU time (utime + stime from
/proc/<pid>/stat) over the walks is divided by the pages served. Also the
p50 of one page's round trip. Not part of the test suite.

    scripts/bench-pages.py [--sluice target/release/sluice]
        [--fixture target/release/sluice-fixture] [--tools "5000 20000 50000"]
        [--rounds 3]
"""

import argparse
import http.client
import json
import os
import statistics
import tempfile
import time

from sluice_serve import serve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(sluice, fixture, tools, workdir):
    child, (host, port) = serve(
        sluice,
        "[catalog]\nlist_page_size = 500\nlist_page_bytes = 16777216\n"
        f'[[upstream]]\nname = "fx"\ncommand = "{fixture}"\n'
        f'args = ["--tools", "{tools}", "--page-size", "1000"]\n',
        workdir,
    )
    return child, host, port


def walk(conn, rid):
    """Every page of tools/list: (pages, tools, per-page seconds)."""
    cursor, pages, tools, times = None, 0, 0, []
    while True:
        params = {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "pages", "version": "0"},
        }}
        if cursor:
            params["cursor"] = cursor
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params})
        t0 = time.perf_counter()
        conn.request("POST", "/mcp", body, {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        })
        answer = json.loads(conn.getresponse().read())
        times.append(time.perf_counter() - t0)
        result = answer["result"]
        pages += 1
        tools += len(result["tools"])
        cursor = result.get("nextCursor")
        if not cursor:
            return pages, tools, times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sluice", default=os.path.join(ROOT, "target/release/sluice"))
    p.add_argument("--fixture", default=os.path.join(ROOT, "target/release/sluice-fixture"))
    p.add_argument("--tools", default="5000 20000 50000")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print("| tools | pages a walk | CPU per page (ms) | page round trip p50 (ms) | sluice RSS (MB) |")
    print("|---:|---:|---:|---:|---:|")
    for n in map(int, a.tools.split()):
        with tempfile.TemporaryDirectory() as workdir:
            child, host, port = start(a.sluice, a.fixture, n, workdir)
            try:
                conn = http.client.HTTPConnection(host, port, timeout=120)
                for _ in range(600):
                    conn.request("GET", "/health")
                    health = json.loads(conn.getresponse().read())
                    listed = health["upstreams"]["fx"].get("tools") or 0
                    if listed >= n:
                        break
                    time.sleep(0.1)
                walk(conn, 0)
                before = cpu_seconds(child.pid)
                times, served, total = [], 0, 0
                for r in range(a.rounds):
                    pages, tools, t = walk(conn, r + 1)
                    assert tools == listed, (tools, listed)
                    served += pages
                    times += t
                total = cpu_seconds(child.pid) - before
                with open(f"/proc/{child.pid}/status") as f:
                    rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
                print(f"| {n:,} | {pages} | {1000 * total / served:.2f} | "
                      f"{1000 * statistics.median(times):.2f} | {rss / 1024:.0f} |")
            finally:
                child.terminate()
                child.wait()


if __name__ == "__main__":
    main()
