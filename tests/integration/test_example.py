"""The bundled example, as a new user runs it: `scripts/run-example.sh --stdio` (with the built
sluice, `SLUICE_BIN`, so no release build), driven line by line over stdin/stdout.

* stdout carries nothing but JSON-RPC: the peer installer and cargo write to stderr, so a stdio
  client reads no stray line;
* server-memory can write: its `MEMORY_FILE_PATH` is absolute, so an entity created through sluice
  lands in `.sluice/example-memory/memory.jsonl` of the repository and is read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import harness as H

SCRIPT = H.REPO / "scripts" / "run-example.sh"
MEMORY_FILE = H.REPO / ".sluice" / "example-memory" / "memory.jsonl"


def exchange(messages: list[dict[str, Any]], errlog: Path) -> list[str]:
    """Sends `messages` one per line, closes stdin once every request has its answer, and returns
    every stdout line (stderr goes to `errlog`)."""
    env = dict(os.environ, SLUICE_BIN=str(H.SLUICE_BIN), PEERS=str(H.PEERS))
    with open(errlog, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [str(SCRIPT), "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" not in message:
                continue
            while True:
                line = proc.stdout.readline()
                assert line, "sluice closed stdout before answering"
                lines.append(line)
                if json.loads(line).get("id") == message["id"]:
                    break
        proc.stdin.close()
        lines.extend(proc.stdout.readlines())
        proc.wait(timeout=H.SESSION_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines


def test_the_example_serves_json_rpc_only_and_memory_writes(tmp_path: Path) -> None:
    entity = f"example-{uuid.uuid4().hex[:12]}"
    errlog = tmp_path / "stderr.log"
    lines = exchange(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "example-test", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "memory__create_entities",
                    "arguments": {
                        "entities": [{"name": entity, "entityType": "test", "observations": ["made by sluice's example"]}]
                    },
                },
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory__search_nodes", "arguments": {"query": entity}},
            },
        ],
        errlog,
    )
    # Every stdout line is a JSON-RPC message: nothing from the installer or the build.
    messages = [json.loads(line) for line in lines]
    assert all(m.get("jsonrpc") == "2.0" for m in messages), lines
    answers = {m["id"]: m for m in messages if "id" in m}
    assert answers[1]["result"]["serverInfo"]["name"] == "sluice", answers[1]
    created = answers[2]
    assert "error" not in created and not created["result"].get("isError"), (created, errlog.read_text(encoding="utf-8")[-2000:])
    found = answers[3]["result"]
    assert not found.get("isError"), found
    assert entity in json.dumps(found["content"]), found
    # The file the example names, in the repository's .sluice/, not under server-memory's dist/.
    assert entity in MEMORY_FILE.read_text(encoding="utf-8")
