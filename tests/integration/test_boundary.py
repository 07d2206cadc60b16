"""sluice's read budget and secret redaction against the real server-everything 2026.8.31.

What the server declares (listed directly with the Python `mcp` 2.3.0 client; checked again by
`test_what_server_everything_declares`):

* ``echo`` ("Echo Tool", "Echoes back the input string") returns one text block
  ``"Echo: " + message`` and is annotated ``readOnlyHint: true, destructiveHint: false,
  idempotentHint: true, openWorldHint: false``. No outputSchema, no structuredContent.
* ``get-env`` ("Print Environment Tool", "Returns all environment variables, helpful for debugging
  MCP server configuration") returns one text block, ``JSON.stringify(process.env, null, 2)``,
  with the same annotations as echo (``readOnlyHint: true``...).
* ``gzip-file-as-resource`` is ``readOnlyHint: false, openWorldHint: true``: it gzips an
  http(s) or *data:* URL and registers the result as a session resource
  ``demo://resource/session/<name>`` (``outputType: "resourceLink"``) or returns it inline as an
  embedded blob (``outputType: "resource"``). With a data: URL it needs no network: it is the
  only way this server produces a resource larger than 64 KiB (its 7 static documents are at
  most 12 KiB; the dynamic text/blob templates are one short line).
* ``args-prompt`` puts its ``city`` argument into its message text: a prompt result of any size.

Because every tool of server-everything says ``readOnlyHint: true`` except the toggles, the
trigger-* tools, gzip and simulate-research-query, the trust switch is what decides:

* untrusted upstream (the default): the hint is ignored, echo is mutation-capable, a 5 MiB echo
  passes whole, byte for byte;
* ``trusted = true``: echo's own ``readOnlyHint: true`` makes it read-only (no ``read_only_tools``
  needed), so the 5 MiB result is refused whole with the fixed refusal;
* untrusted but ``read_only_tools = ["echo"]``: read-only by the operator's word, refused too.

The three variants are the same server under three upstream names behind one sluice.

Redaction through ``get-env``: the upstream's environment is exactly its configured ``env`` plus
PATH and HOME. Each secret is chosen so that one rule can catch it:

* ``API_TOKEN`` (a literal in sluice.toml): an upstream credential (its name names a secret);
* ``MY_SECRET = "${MY_SECRET}"``: sluice's own environment, listed in ``[redaction] secret_env``
  (and its name names a secret too);
* ``OPAQUE_SETTING = "${SLUICE_IT_OPAQUE}"``: listed in ``secret_env`` and nothing else (the name
  does not look secret, the value has no token shape): only the secret_env rule can catch it;
* ``CI_NOTE``: a ``ghp_...`` token shape under an innocent name: only the value patterns can;
* controls that must pass unchanged: ``GREETING = "hello-world"`` and
  ``PLAIN_SETTING = "${SLUICE_IT_PLAIN}"`` (from sluice's environment but *not* in secret_env).

Every combination runs over ``sluice --stdio`` and sluice HTTP, in client modes ``legacy`` and
``2026-07-28``. Every await is bounded (anyio.fail_after); failures carry sluice's stderr.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client

import harness as H
from conftest import _OPEN_LOGS, stdio_args, tail, toml_str, write_config

MODES = ("legacy", H.MODERN)
COMBOS = [pytest.param(t, m, id=f"{t}-{m}") for t in ("stdio", "http") for m in MODES]
SEP = H.SEPARATOR
DEFAULT_BUDGET = 1_048_576
SMALL_BUDGET = 65_536
SESSION_DEADLINE = 60.0  # one whole session through sluice, handshake to disconnect

REFUSAL_CODE = "MCP_READ_RESPONSE_TOO_LARGE"
REFUSAL_TEXT = (
    "The result was withheld whole: it is larger than the read budget this gateway allows "
    "(mcp_read_response_max_bytes). Nothing of it was returned. Request less data and call again."
)


def refusal_data(limit: int) -> dict[str, Any]:
    """The fixed data of every refusal (crates/sluice-core/src/boundary/budget.rs)."""
    return {
        "error": {
            "code": REFUSAL_CODE,
            "category": "client",
            "retriable": False,
            "recoveryHint": "Request less data: narrow the query, a smaller range or page, or fewer fields, "
            "then call again.",
        },
        "responseBudget": {"limitBytes": limit, "measurement": "above-limit", "scope": "mcp-read-result"},
        "status": "response-too-large",
    }


# ------------------------------------------------------------------------------------------------
# Payloads
# ------------------------------------------------------------------------------------------------

ECHO_BYTES = 5 * 1024 * 1024


def big_message(n_bytes: int = ECHO_BYTES) -> str:
    """At least n_bytes of UTF-8 text with multibyte characters, quotes, backslashes and newlines,
    and nothing any redaction rule could match (no uppercase, '@', '=', ':', '_' or '-')."""
    parts: list[str] = []
    size = 0
    i = 0
    while size < n_bytes:
        line = f'line {i:07d} héllo wörld ✓ 中文 "quoted" \\ back\\slash\n'
        parts.append(line)
        size += len(line.encode("utf-8"))
        i += 1
    return "".join(parts)


MESSAGE = big_message()
# Pieces of the message that must not appear in a refusal.
MESSAGE_MARKERS = ("line 0000001", "héllo wörld", "h\\u00e9llo", "back\\\\slash", "中文", "\\u4e2d")

# Fake secrets (none is real). Each at least 8 bytes (shorter exact secrets are not matched).
API_TOKEN = "itfake-upstream-credential-7c1e0b9d4a"
MY_SECRET = "itfake-secret-env-value-51f3a2"
OPAQUE = "itfake-opaque-value-9d02e6"
GHP = "ghp_" + "Zq8" * 12  # github-token shape: ghp_ + 36 alphanumerics
SECRETS = {"API_TOKEN": API_TOKEN, "MY_SECRET": MY_SECRET, "OPAQUE_SETTING": OPAQUE, "CI_NOTE": GHP}
PLAIN = "plain-value-visible-3b7c"
SLUICE_ENV = {"MY_SECRET": MY_SECRET, "SLUICE_IT_OPAQUE": OPAQUE, "SLUICE_IT_PLAIN": PLAIN}
UPSTREAM_ENV = {
    "API_TOKEN": API_TOKEN,
    "MY_SECRET": "${MY_SECRET}",
    "OPAQUE_SETTING": "${SLUICE_IT_OPAQUE}",
    "CI_NOTE": GHP,
    "GREETING": "hello-world",
    "PLAIN_SETTING": "${SLUICE_IT_PLAIN}",
}
# What the upstream's environment holds once sluice expanded ${...}.
RESOLVED_ENV = {**UPSTREAM_ENV, "MY_SECRET": MY_SECRET, "OPAQUE_SETTING": OPAQUE, "PLAIN_SETTING": PLAIN}


def random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def data_url(raw: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(raw).decode("ascii")


# ------------------------------------------------------------------------------------------------
# Config and sluice
# ------------------------------------------------------------------------------------------------


def everything(name: str, env: dict[str, str] | None = None) -> H.Upstream:
    return H.Upstream(name, H.NODE, (str(H.EVERYTHING_JS), "stdio"), env=dict(env or {}))


def write_boundary_config(
    path: Path,
    upstreams: list[tuple[H.Upstream, dict[str, Any]]],
    *,
    limit: int | None = None,
    secret_env: list[str] | None = None,
) -> Path:
    """conftest.write_config, each [[upstream]] table followed by its extra keys (trusted,
    read_only_tools), then [limits] and [redaction]."""
    blocks = write_config(path, [up for up, _ in upstreams]).read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert len(blocks) == 1 + len(upstreams), blocks  # [server], then one block per upstream
    for i, (_, extra) in enumerate(upstreams, start=1):
        for k, v in extra.items():
            value = ("true" if v else "false") if isinstance(v, bool) else (
                "[" + ", ".join(toml_str(x) for x in v) + "]")
            blocks[i] += f"\n{k} = {value}"
    text = "\n\n".join(blocks) + "\n"
    if limit is not None:
        text += f"\n[limits]\nmcp_read_response_max_bytes = {limit}\n"
    if secret_env:
        text += "\n[redaction]\nsecret_env = [" + ", ".join(toml_str(n) for n in secret_env) + "]\n"
    path.write_text(text, encoding="utf-8")
    return path


class Gateway:
    """One sluice for one test: `sluice --stdio` (a new process per session, started by the client)
    or one `sluice serve --listen` (started on first use, stopped and checked by the fixture)."""

    def __init__(self, tmp: Path, config: Path, transport: str, servers: Any, env: dict[str, str]) -> None:
        self.config = config
        self.transport = transport
        self.env = env
        self.log_path = tmp / f"sluice-{transport}.log"
        self._servers = servers
        self._srv: Any = None
        self.upstreams: set[str] = set()

    def server(self) -> Any:
        if self.transport == "http":
            if self._srv is None:
                self._srv = self._servers(["--config", str(self.config)], self.log_path, self.upstreams, env=self.env)
            return self._srv.url
        errlog = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed at session end
        _OPEN_LOGS.append(errlog)
        params = StdioServerParameters(
            command=str(H.SLUICE_BIN), args=stdio_args(self.config), env={"RUST_BACKTRACE": "1", **self.env}
        )
        return stdio_client(params, errlog=errlog)

    def log(self) -> str:
        if self._srv is not None:
            return self._srv.stderr_tail(60)
        return tail(self.log_path, 60)

    def run(self, mode: str, body: Callable[[Any], Awaitable[Any]]) -> Any:
        """One client session in `mode`: wait until every upstream's tools are listed, run body."""

        async def session() -> Any:
            with anyio.fail_after(H.CONNECT_TIMEOUT) as scope:
                async with H.make_client(self.server(), mode) as client:
                    scope.deadline = anyio.current_time() + SESSION_DEADLINE
                    missing, _ = await H.wait_until_listed(client, self.upstreams, timeout=H.READY_TIMEOUT)
                    if missing:
                        raise AssertionError(f"upstreams not ready: {missing}")
                    return client.protocol_version, await body(client)

        try:
            return anyio.run(session)
        except Exception as e:  # noqa: BLE001 - reported with sluice's stderr
            pytest.fail(f"session through sluice ({self.transport}, {mode}) failed: {H.describe_error(e)}\n"
                        f"--- sluice stderr ---\n{self.log()}", pytrace=False)

    def ctx(self, mode: str, version: str | None) -> str:
        return f"\n({self.transport}, mode {mode}, negotiated {version})\n--- sluice stderr ---\n{self.log()}"


@pytest.fixture
def gateway(tmp_path: Path, peers: Path, sluice_bin: Path, sluice_servers: Any) -> Callable[..., Gateway]:
    def make(config: Path, transport: str, upstreams: set[str], env: dict[str, str] | None = None) -> Gateway:
        g = Gateway(tmp_path, config, transport, sluice_servers, env or {})
        g.upstreams = upstreams
        return g

    return make


async def outcome(fn: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """{"result": dumped result} or {"error": {code, message, data}} (a JSON-RPC error)."""
    try:
        with anyio.fail_after(H.OP_TIMEOUT):
            return {"result": H.dump(await fn())}
    except Exception as e:  # noqa: BLE001
        err = getattr(e, "error", None)
        if err is None:
            raise
        return {"error": {"code": err.code, "message": err.message, "data": err.data}}


def text_of(o: dict[str, Any]) -> str:
    return json.dumps(o, ensure_ascii=False)


def essential_call(result: dict[str, Any]) -> dict[str, Any]:
    return {"content": result.get("content"), "structuredContent": result.get("structuredContent"),
            "isError": bool(result.get("isError", False))}


def assert_tool_refusal(o: dict[str, Any], limit: int, ctx: str) -> None:
    assert "result" in o, f"expected a CallToolResult refusal, got {text_of(o)[:2000]}{ctx}"
    got = essential_call(o["result"])
    assert got["isError"] is True, f"{text_of(got)[:2000]}{ctx}"
    sc = got["structuredContent"] or {}
    assert sc.get("error", {}).get("code") == REFUSAL_CODE, f"{text_of(got)[:2000]}{ctx}"
    assert sc.get("responseBudget", {}).get("limitBytes") == limit, f"{text_of(got)[:2000]}{ctx}"
    assert sc.get("responseBudget", {}).get("measurement") == "above-limit", f"{text_of(got)[:2000]}{ctx}"
    # The whole refusal is the fixed one: nothing of what was refused.
    assert got == {"content": [{"type": "text", "text": REFUSAL_TEXT}], "structuredContent": refusal_data(limit),
                   "isError": True}, f"{text_of(got)[:2000]}{ctx}"


def assert_read_refusal(o: dict[str, Any], limit: int, surface: str, ctx: str) -> None:
    assert "error" in o, f"expected -32602, got a result of {len(text_of(o))} bytes: {text_of(o)[:300]}{ctx}"
    e = o["error"]
    assert e["code"] == -32602, f"{e}{ctx}"
    assert e["data"] == {**refusal_data(limit), "surface": surface}, f"{e}{ctx}"


# ------------------------------------------------------------------------------------------------
# 1. What server-everything declares
# ------------------------------------------------------------------------------------------------


def test_what_server_everything_declares(peers: Path) -> None:
    """Directly, without sluice: the annotations the docstring records, and the 5 MiB echo text."""

    async def body() -> dict[str, Any]:
        with anyio.fail_after(H.CONNECT_TIMEOUT + 3 * H.OP_TIMEOUT):
            async with H.make_client(H.stdio_transport(everything("everything")), "legacy") as client:
                tools = {t["name"]: t for t in (await H.drain(client, "tools")).items}
                echo = await outcome(lambda: client.call_tool("echo", {"message": MESSAGE}))
                return {"tools": tools, "echo": echo}

    got = anyio.run(body)
    tools = got["tools"]
    read_only = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert tools["echo"].get("annotations") == read_only, tools["echo"]
    assert tools["get-env"].get("annotations") == read_only, tools["get-env"]
    assert "outputSchema" not in tools["echo"] and "outputSchema" not in tools["get-env"]
    assert tools["gzip-file-as-resource"]["annotations"]["readOnlyHint"] is False, tools["gzip-file-as-resource"]
    result = got["echo"]["result"]
    assert essential_call(result) == {"content": [{"type": "text", "text": "Echo: " + MESSAGE}],
                                      "structuredContent": None, "isError": False}


# ------------------------------------------------------------------------------------------------
# 2. A 5 MiB echo: mutation-capable passes whole, read-only is refused whole
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_five_mib_echo_passes_or_is_refused_by_the_read_only_rule(
    tmp_path: Path, gateway: Callable[..., Gateway], transport: str, mode: str
) -> None:
    assert len(MESSAGE.encode("utf-8")) >= ECHO_BYTES
    cfg = write_boundary_config(tmp_path / "sluice.toml", [
        # (a) untrusted (the default): echo's readOnlyHint is not believed: mutation-capable.
        (everything("plain"), {}),
        # (b) trusted: echo's own readOnlyHint: true makes it read-only (no read_only_tools needed).
        (everything("trusted"), {"trusted": True}),
        # (c) untrusted, but the operator names echo read-only.
        (everything("listed"), {"read_only_tools": ["echo"]}),
    ])
    g = gateway(cfg, transport, {"plain", "trusted", "listed"})

    async def body(client: Any) -> dict[str, Any]:
        out = {}
        for up in ("plain", "trusted", "listed"):
            t0 = time.monotonic()
            out[up] = await outcome(lambda up=up: client.call_tool(f"{up}{SEP}echo", {"message": MESSAGE}))
            out[up + "_s"] = time.monotonic() - t0
        return out

    version, got = g.run(mode, body)
    ctx = g.ctx(mode, version)

    # (a) passes whole, byte for byte.
    plain = got["plain"]
    assert "result" in plain, f"{text_of(plain)[:2000]}{ctx}"
    result = essential_call(plain["result"])
    assert result["isError"] is False, f"{text_of(result)[:2000]}{ctx}"
    text = result["content"][0]["text"] if result["content"] else ""
    assert len(result["content"]) == 1 and text == "Echo: " + MESSAGE, (
        f"the mutation-capable echo did not pass whole: {len(text.encode())} bytes back for "
        f"{len(MESSAGE.encode()) + 6} expected{ctx}")

    # (b) and (c): refused whole, nothing of the message anywhere in the response.
    for up in ("trusted", "listed"):
        assert_tool_refusal(got[up], DEFAULT_BUDGET, f" [{up}]{ctx}")
        whole = text_of(got[up])
        assert len(whole) < 2_000, f"[{up}] a refusal of {len(whole)} bytes{ctx}"
        for marker in MESSAGE_MARKERS:
            assert marker not in whole, f"[{up}] {marker!r} of the message leaked into the refusal{ctx}"
        assert str(len(MESSAGE.encode())) not in whole and str(len(MESSAGE)) not in whole, f"size leaked{ctx}"
    print(f"{transport}/{mode}: 5 MiB echo passed in {got['plain_s']:.2f}s, "
          f"refused in {got['trusted_s']:.2f}s (trusted) / {got['listed_s']:.2f}s (listed)")


# ------------------------------------------------------------------------------------------------
# 3. get-env: secrets redacted, everything else untouched
# ------------------------------------------------------------------------------------------------


def test_get_env_directly_shows_the_secrets(peers: Path) -> None:
    """Without sluice the secrets really are in get-env's answer (with the env sluice would give the
    upstream after expanding ${...})."""

    async def body() -> dict[str, Any]:
        with anyio.fail_after(H.CONNECT_TIMEOUT + H.OP_TIMEOUT):
            async with H.make_client(H.stdio_transport(everything("everything", RESOLVED_ENV)), "legacy") as client:
                return await outcome(lambda: client.call_tool("get-env", {}))

    got = anyio.run(body)
    env = json.loads(got["result"]["content"][0]["text"])
    for name, value in RESOLVED_ENV.items():
        assert env.get(name) == value, (name, env)
    assert "[redacted]" not in text_of(got)


@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_get_env_through_sluice_redacts_secrets_only(
    tmp_path: Path, gateway: Callable[..., Gateway], transport: str, mode: str
) -> None:
    cfg = write_boundary_config(
        tmp_path / "sluice.toml",
        [(everything("everything", UPSTREAM_ENV), {})],
        secret_env=["MY_SECRET", "SLUICE_IT_OPAQUE"],
    )
    g = gateway(cfg, transport, {"everything"}, env=SLUICE_ENV)

    async def body(client: Any) -> dict[str, Any]:
        return await outcome(lambda: client.call_tool(f"everything{SEP}get-env", {}))

    version, got = g.run(mode, body)
    ctx = g.ctx(mode, version)
    whole = text_of(got)
    assert "result" in got, f"{whole[:2000]}{ctx}"
    for name, secret in SECRETS.items():
        assert secret not in whole, f"{name}'s value reached the client: {whole[:3000]}{ctx}"
        assert json.dumps(secret)[1:-1] not in whole, f"{name}'s value (escaped) reached the client{ctx}"
    assert "[redacted]" in whole, f"{whole[:3000]}{ctx}"
    result = essential_call(got["result"])
    assert result["isError"] is False and len(result["content"]) == 1, f"{whole[:3000]}{ctx}"
    env = json.loads(result["content"][0]["text"])  # still a JSON document after redaction
    expected = {**RESOLVED_ENV, **{name: "[redacted]" for name in SECRETS}}
    # Only the configured env plus PATH and HOME reach the upstream; PATH and HOME unchanged.
    assert set(env) == set(expected) | {"PATH", "HOME"}, f"{sorted(env)}{ctx}"
    assert {k: v for k, v in env.items() if k not in ("PATH", "HOME")} == expected, f"{env}{ctx}"
    assert env["HOME"] and "[redacted]" not in env["HOME"] + env["PATH"], f"{env}{ctx}"
    log = g.log_path.read_text(encoding="utf-8", errors="replace") if g.log_path.exists() else ""
    for name, secret in SECRETS.items():
        assert secret not in log, f"{name}'s value is in sluice's stderr{ctx}"


# ------------------------------------------------------------------------------------------------
# 4. A resource and a prompt larger than a 64 KiB budget
# ------------------------------------------------------------------------------------------------

BIG_RAW = 96 * 1024  # incompressible: the gzip blob is ~96 KiB raw, ~128 KiB of base64
SMALL_RAW = 1024
BIG_CITY = "x" * (80 * 1024)


@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_large_resource_and_prompt_are_refused_under_a_small_budget(
    tmp_path: Path, gateway: Callable[..., Gateway], transport: str, mode: str
) -> None:
    cfg = write_boundary_config(tmp_path / "sluice.toml", [(everything("everything"), {})], limit=SMALL_BUDGET)
    g = gateway(cfg, transport, {"everything"})
    big, small = random_bytes(BIG_RAW, 1), random_bytes(SMALL_RAW, 2)
    tag = mode.replace("-", "")
    big_name, small_name = f"big-{tag}.bin.gz", f"small-{tag}.bin.gz"
    gz = f"everything{SEP}gzip-file-as-resource"

    async def body(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, name, raw in (("big_link", big_name, big), ("small_link", small_name, small)):
            out[key] = await outcome(lambda name=name, raw=raw: client.call_tool(
                gz, {"name": name, "data": data_url(raw), "outputType": "resourceLink"}))
        # gzip is mutation-capable (readOnlyHint: false): the whole blob comes back inline.
        out["big_inline"] = await outcome(lambda: client.call_tool(
            gz, {"name": f"inline-{tag}.bin.gz", "data": data_url(big), "outputType": "resource"}))
        out["big_read"] = await outcome(lambda: client.read_resource(f"demo://resource/session/{big_name}"))
        out["small_read"] = await outcome(lambda: client.read_resource(f"demo://resource/session/{small_name}"))
        out["big_prompt"] = await outcome(lambda: client.get_prompt(f"everything{SEP}args-prompt", {"city": BIG_CITY}))
        out["small_prompt"] = await outcome(lambda: client.get_prompt(f"everything{SEP}args-prompt", {"city": "Paris"}))
        return out

    version, got = g.run(mode, body)
    ctx = g.ctx(mode, version)

    for key in ("big_link", "small_link"):
        o = got[key]
        assert "result" in o and not o["result"].get("isError"), f"{key}: {text_of(o)[:2000]}{ctx}"
        assert o["result"]["content"][0]["type"] == "resource_link", f"{key}: {text_of(o)[:2000]}{ctx}"

    inline = got["big_inline"]
    assert "result" in inline and not inline["result"].get("isError"), f"{text_of(inline)[:2000]}{ctx}"
    blob = inline["result"]["content"][0]["resource"]["blob"]
    assert len(blob) > SMALL_BUDGET, f"inline blob only {len(blob)} bytes{ctx}"
    assert gzip.decompress(base64.b64decode(blob)) == big, f"inline blob altered{ctx}"

    # The resource read over the budget: -32602, the fixed data, surface "resource", no URI, no bytes.
    assert_read_refusal(got["big_read"], SMALL_BUDGET, "resource", ctx)
    whole = text_of(got["big_read"])
    assert "demo://" not in whole and big_name not in whole, f"the URI leaked: {whole}{ctx}"
    assert blob[:64] not in whole and blob[-64:] not in whole, f"bytes of the blob leaked{ctx}"
    # The same resource kind under the budget passes.
    small_read = got["small_read"]
    assert "result" in small_read, f"{text_of(small_read)[:2000]}{ctx}"
    contents = small_read["result"]["contents"]
    assert len(contents) == 1 and gzip.decompress(base64.b64decode(contents[0]["blob"])) == small, f"{ctx}"

    # A prompt over the budget: -32602, surface "prompt", neither the name nor the argument.
    assert_read_refusal(got["big_prompt"], SMALL_BUDGET, "prompt", ctx)
    whole = text_of(got["big_prompt"])
    assert "args-prompt" not in whole and "xxxxxxxx" not in whole, f"{whole}{ctx}"
    small_prompt = got["small_prompt"]
    assert "result" in small_prompt, f"{text_of(small_prompt)[:2000]}{ctx}"
    assert small_prompt["result"]["messages"][0]["content"]["text"] == "What's weather in Paris?", f"{ctx}"
