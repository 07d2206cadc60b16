"""Sandboxed stdio upstreams (S-21, bubblewrap), driven through sluice with the official Python SDK.

* A probing server (sandbox_probe.py) behind sluice twice, unsandboxed and sandboxed: unsandboxed
  it reads a secret in $HOME, connects to a loopback listener of the host and writes a file
  outside anything it was given; sandboxed it can do none of these, writes only in its declared
  folder, runs in its own PID namespace, and still serves its tool. /health and the spawn log say
  which is which.
* A sandbox that cannot be set up (a declared path missing, no bwrap on PATH) is the upstream's
  start-up error, with the reason; the child is never started without it.
* The example config (examples/sluice.toml, as it is) runs its four real servers sandboxed:
  server-everything, mcp-server-time, server-memory writing its file, server-filesystem limited
  to its folder.

Needs `bwrap` (Debian's bubblewrap, installed by scripts/test-peers.sh).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness as H
from conftest import SluiceServer, toml_inline_table, toml_str

PROBE = Path(__file__).resolve().parent / "sandbox_probe.py"
SECRET = "PRIVATE-KEY-3f9a1c7e-never-to-leave-home"



@pytest.fixture(autouse=True)
def bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap not found (scripts/test-peers.sh installs bubblewrap)", pytrace=False)


async def call(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + H.OP_TIMEOUT):
        async with H.make_client(url, "legacy") as client:
            with anyio.fail_after(H.OP_TIMEOUT):
                return H.dump(await client.call_tool(tool, args))


def text_of(result: dict[str, Any]) -> str:
    assert result.get("isError") is not True, result
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def spawn_line(log: Path, upstream: str) -> str:
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if "spawned upstream" in line]
    mine = [line for line in lines if f'upstream="{upstream}"' in line]
    assert mine, f"no spawn line for {upstream}: {lines}"
    return mine[0]


def test_a_probe_reaches_out_unsandboxed_and_nothing_sandboxed(
    tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_ed25519"
    secret.write_text(SECRET + "\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    lines = ["[sandbox]", "enabled = true"]
    for name, sandbox in (("open", "{ enabled = false }"), ("boxed", None)):
        declared = tmp_path / f"declared-{name}"
        declared.mkdir()
        env = {
            "PROBE_SECRET": str(secret),
            "PROBE_PORT": str(port),
            "PROBE_OUTSIDE": str(outside / f"{name}-was-here"),
            "PROBE_DECLARED": str(declared / "written"),
        }
        lines += [
            "",
            "[[upstream]]",
            f"name = {toml_str(name)}",
            f"command = {toml_str(str(H.VENV / 'bin' / 'python'))}",
            f"args = [{toml_str(str(PROBE))}]",
            f"env = {toml_inline_table(env)}",
            f"sandbox = {sandbox or '{ write = [' + toml_str(str(declared)) + '] }'}",
        ]
    config = tmp_path / "sluice.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = tmp_path / "sluice.log"
    try:
        srv = sluice_servers(["--config", str(config)], log, {"open", "boxed"}, env={"HOME": str(home)})
        health = srv.health()["upstreams"]
        assert {n: (u["state"], u["sandbox"]) for n, u in health.items()} == {
            "open": ("ready", {"kind": "none"}),
            "boxed": ("ready", {"kind": "bwrap", "network": False, "read": 0, "write": 1}),
        }, f"{health}\n{srv.stderr_tail()}"
        opened = json.loads(text_of(anyio.run(call, srv.url, "open__probe", {})))
        boxed_text = text_of(anyio.run(call, srv.url, "boxed__probe", {}))
    finally:
        listener.close()
    boxed = json.loads(boxed_text)

    # Unsandboxed, every probe succeeds: this is what the sandbox takes away.
    assert {k: v for k, v in opened.items() if k != "pid"} == {
        "read_home_file": "ok",
        "connect_loopback": "ok",
        "write_outside": "ok",
        "write_declared": "ok",
    }
    assert (outside / "open-was-here").is_file()
    # Sandboxed, it still serves its tool, and reaches none of them.
    assert boxed["read_home_file"].startswith("FileNotFoundError"), boxed
    assert boxed["connect_loopback"].startswith(("ConnectionRefusedError", "OSError")), boxed
    assert boxed["write_outside"].startswith(("FileNotFoundError", "OSError", "PermissionError")), boxed
    assert not (outside / "boxed-was-here").exists()
    assert boxed["write_declared"] == "ok", boxed
    assert (tmp_path / "declared-boxed" / "written").read_text(encoding="utf-8") == "written by sandbox_probe\n"
    # Its own PID namespace: bwrap's init is 1, the server 2.
    assert boxed["pid"] <= 2, boxed
    assert SECRET not in boxed_text
    # The spawn log says how each runs.
    assert "sandbox=bwrap (network off, 0 read path(s), 1 write path(s))" in spawn_line(log, "boxed")
    assert "sandbox=none" in spawn_line(log, "open")


def test_the_example_runs_its_real_servers_sandboxed(
    tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any
) -> None:
    # The layout scripts/run-example.sh makes, with the example config as it is; its state
    # directory (beside the config) is not the folder sluice runs in.
    work = tmp_path / "work"
    (work / ".sluice" / "example-files").mkdir(parents=True)
    (work / ".sluice" / "example-memory").mkdir()
    (work / ".sluice" / "example-files" / "hello.txt").write_text("hello from sluice's example\n", encoding="utf-8")
    (work / ".peers").symlink_to(H.PEERS)
    config = tmp_path / "config" / "sluice.toml"
    config.parent.mkdir()
    shutil.copy(H.REPO / "examples" / "sluice.toml", config)
    home = tmp_path / "home"
    home.mkdir()
    names = {"everything", "time", "memory", "files"}
    srv = sluice_servers(["--config", str(config)], tmp_path / "sluice.log", names, env={"HOME": str(home), "PWD": str(work)}, cwd=work)
    health = srv.health()["upstreams"]
    assert {n: u["state"] for n, u in health.items()} == dict.fromkeys(names, "ready"), srv.stderr_tail()
    assert all(u["sandbox"]["kind"] == "bwrap" and u["sandbox"]["network"] is False for u in health.values())

    assert text_of(anyio.run(call, srv.url, "everything__echo", {"message": "sandboxed"})) == "Echo: sandboxed"
    now = json.loads(text_of(anyio.run(call, srv.url, "time__get_current_time", {"timezone": "UTC"})))
    assert now["timezone"] == "UTC"
    folder = (work / ".sluice" / "example-files").resolve()
    hello = text_of(anyio.run(call, srv.url, "files__read_text_file", {"path": str(folder / "hello.txt")}))
    assert hello == "hello from sluice's example\n"
    text_of(anyio.run(call, srv.url, "files__write_file", {"path": str(folder / "new.txt"), "content": "from the sandbox"}))
    assert (folder / "new.txt").read_text(encoding="utf-8") == "from the sandbox"
    entity = {"name": "sluice", "entityType": "project", "observations": ["runs sandboxed"]}
    assert "runs sandboxed" in text_of(anyio.run(call, srv.url, "memory__create_entities", {"entities": [entity]}))
    memory = (work / ".sluice" / "example-memory" / "memory.jsonl").read_text(encoding="utf-8")
    assert "runs sandboxed" in memory
    # Every child was started under bwrap.
    spawned = [line for line in (tmp_path / "sluice.log").read_text().splitlines() if "spawned upstream" in line]
    assert spawned and all(re.search(r"sandbox=bwrap \(network off", line) for line in spawned), spawned


def first_error(srv: SluiceServer, name: str) -> str:
    deadline = time.monotonic() + H.READY_TIMEOUT
    while time.monotonic() < deadline:
        error = srv.health()["upstreams"][name].get("last_error")
        if error:
            return str(error)
        time.sleep(0.1)
    raise AssertionError(f"{name} never failed\n{srv.stderr_tail()}")


def test_a_sandbox_that_cannot_be_set_up_fails_the_start(tmp_path: Path, peers: Path, sluice_bin: Path) -> None:
    missing = tmp_path / "not-there"
    config = tmp_path / "sluice.toml"
    config.write_text(
        "\n".join(
            [
                "[sandbox]",
                "enabled = true",
                "[[upstream]]",
                'name = "probe"',
                f"command = {toml_str(str(H.VENV / 'bin' / 'python'))}",
                f"args = [{toml_str(str(PROBE))}]",
                f"sandbox = {{ write = [{toml_str(str(missing))}] }}",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    for env, says in (
        ({}, f"sandbox: write path {str(missing)!r} cannot be shown: No such file or directory".replace("'", '"')),
        (
            {"PATH": str(tmp_path)},
            "the sandbox needs bwrap, which is not on PATH (install bubblewrap, or turn the sandbox off",
        ),
    ):
        log = tmp_path / f"sluice-{len(env)}.log"
        srv = SluiceServer(["serve", "--config", str(config), "--listen", "127.0.0.1:0"], log, env=env)
        try:
            srv.start()
            error = first_error(srv, "probe")
        finally:
            srv.stop()
        assert says in error, error
        # Nothing was started, sandboxed or not.
        assert "spawned upstream" not in log.read_text(encoding="utf-8")
