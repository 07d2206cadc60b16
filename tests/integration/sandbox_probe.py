"""A stdio MCP server that probes what it can reach (official `mcp` 2.3.0 SDK), for test_sandbox.py.

Its one tool, ``probe``, tries what a hostile server would and answers with a JSON text block
saying, for each attempt, ``"ok"`` or the error it met:

* ``read_home_file``: read the file ``$PROBE_SECRET`` (a secret in the home directory; the key does
  not say "secret", which sluice would redact the value of);
* ``connect_loopback``: open a TCP connection to ``127.0.0.1:$PROBE_PORT`` (a listener of the host);
* ``write_outside``: create the file ``$PROBE_OUTSIDE`` (outside anything it was given);
* ``write_declared``: create the file ``$PROBE_DECLARED`` (in the folder it may write);
* ``pid``: its own process id (1 or 2 in a PID namespace of its own).

    .peers/venv/bin/python tests/integration/sandbox_probe.py
"""

from __future__ import annotations

import json
import os
import socket

import anyio
from mcp.server import MCPServer

app = MCPServer("sandbox-probe", version="1.0.0")


def attempt(action: object) -> str:
    try:
        action()  # type: ignore[operator]
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    return "ok"


def read_secret() -> None:
    with open(os.environ["PROBE_SECRET"], encoding="utf-8") as f:
        f.read()


def connect() -> None:
    with socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=3):
        pass


def write(variable: str) -> object:
    def action() -> None:
        with open(os.environ[variable], "w", encoding="utf-8") as f:
            f.write("written by sandbox_probe\n")

    return action


@app.tool(description="Try to read a home secret, reach a loopback listener and write files", structured_output=False)
def probe() -> str:
    return json.dumps(
        {
            "read_home_file": attempt(read_secret),
            "connect_loopback": attempt(connect),
            "write_outside": attempt(write("PROBE_OUTSIDE")),
            "write_declared": attempt(write("PROBE_DECLARED")),
            "pid": os.getpid(),
        }
    )


if __name__ == "__main__":
    anyio.run(app.run_stdio_async)
