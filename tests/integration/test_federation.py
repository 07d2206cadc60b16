"""sluice federating five real upstreams, driven by the official Python SDK client (mcp 2.3.0).

Upstreams (all stdio): server-everything 2026.8.31, server-everything 2025.12.18 (100 resources in
pages of 10), mcp-server-time (speaks 2026-07-28), server-memory, server-filesystem.

For each downstream transport (sluice --stdio, sluice HTTP) and client mode (auto, legacy,
2026-07-28), one session through sluice lists everything (every page) and performs every operation
in harness.OPS; the same is done directly against each upstream in the same client mode. The tests
below only compare the two records, so each comparison reports on its own while each sluice session
runs once. A session through sluice is started lazily the first time a test needs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness as H
from conftest import SluiceServer, stdio_server, tail, write_config

TRANSPORTS = ("stdio", "http")
COMBOS = [pytest.param(t, m, id=f"{t}-{m}") for t in TRANSPORTS for m in H.MODES]
UPSTREAM_NAMES = ("everything", "everything2025", "time", "memory", "filesystem")


class Federation:
    """Module state: one workspace, one sluice HTTP server, cached observations."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ws = H.Workspace(root / "ws")
        self.twins = root / "twins"
        self.twins.mkdir()
        self.logs = root / "logs"
        self.logs.mkdir()
        # Separate memory files per sluice instance; the filesystem dir is shared with the direct
        # baseline so that paths in results are equal.
        self.ups = {
            t: self.ws.upstreams(memory_file=root / f"memory-{t}" / "memory.jsonl") for t in TRANSPORTS
        }
        for t in TRANSPORTS:
            (root / f"memory-{t}").mkdir()
        self.configs = {t: write_config(root / f"sluice-{t}.toml", self.ups[t]) for t in TRANSPORTS}
        self.http: SluiceServer | None = None
        self.http_error: str | None = None
        self._direct: dict[str, H.DirectObservation] = {}
        self._through: dict[tuple[str, str], H.ThroughObservation] = {}

    def start_http(self) -> None:
        self.http = SluiceServer(["serve", "--config", str(self.configs["http"]), "--listen", "127.0.0.1:0"],
                                 self.logs / "sluice-http.log")
        try:
            self.http.start()
        except RuntimeError as e:
            self.http_error = str(e)
            return
        self.http.wait_healthy(set(UPSTREAM_NAMES))

    def direct(self, mode: str) -> H.DirectObservation:
        if mode not in self._direct:
            self._direct[mode] = anyio.run(H.observe_direct, self.ws, mode)
        return self._direct[mode]

    def through(self, transport: str, mode: str) -> H.ThroughObservation:
        key = (transport, mode)
        if key not in self._through:
            if transport == "http":
                if self.http_error or self.http is None:
                    pytest.fail(f"sluice HTTP server did not start: {self.http_error}", pytrace=False)
                server: Any = self.http.url
            else:
                server = stdio_server(self.configs["stdio"], self.log_path(transport, mode))
            self._through[key] = anyio.run(
                H.observe_through, server, transport, mode, self.ws, self.ups[transport], self.twins
            )
            if self.http is not None:
                self.http.note_children()
        return self._through[key]

    def log_path(self, transport: str, mode: str) -> Path:
        return self.logs / (f"sluice-stdio-{mode}.log" if transport == "stdio" else "sluice-http.log")

    def sluice_log(self, transport: str, mode: str) -> str:
        if transport == "http" and self.http is not None:
            return self.http.stderr_tail()
        return tail(self.log_path(transport, mode))

    def session(self, transport: str, mode: str) -> H.ThroughObservation:
        """The observation, failing the test if the session itself could not be established."""
        obs = self.through(transport, mode)
        if obs.connect_error:
            pytest.fail(
                f"could not connect to sluice ({transport}, mode {mode}): {obs.connect_error}\n"
                f"--- sluice stderr ---\n{self.sluice_log(transport, mode)}",
                pytrace=False,
            )
        return obs

    def direct_lists(self, transport: str, mode: str, kind: H.ListKind) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for name, up in self.direct(mode).upstreams.items():
            if up.connect_error:
                pytest.fail(f"direct session to {name} failed: {up.connect_error}", pytrace=False)
            listing = up.lists[kind].unwrap(f"direct {kind} of {name} ({up.mode})")
            out[name] = listing.items
        return out


@pytest.fixture(scope="module")
def fed(tmp_path_factory: pytest.TempPathFactory, peers: Path, sluice_bin: Path) -> Any:
    f = Federation(tmp_path_factory.mktemp("federation"))
    f.start_http()
    yield f
    if f.http is not None:
        f.http.stop()  # raises (teardown error) if sluice or an upstream did not exit


# ------------------------------------------------------------------------------------------------
# Session and health
# ------------------------------------------------------------------------------------------------


def test_http_health_reports_all_upstreams_ready(fed: Federation) -> None:
    if fed.http is None or fed.http_error:
        pytest.fail(f"sluice HTTP server did not start: {fed.http_error}", pytrace=False)
    doc = fed.http.health()
    assert doc["_http_status"] == 200, doc
    assert doc.get("status") == "ok", doc
    assert isinstance(doc.get("version"), str) and doc["version"], doc
    states = {name: (info or {}).get("state") for name, info in (doc.get("upstreams") or {}).items()}
    assert states == {name: "ready" for name in UPSTREAM_NAMES}, doc


@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_session(fed: Federation, transport: str, mode: str) -> None:
    obs = fed.session(transport, mode)
    log = fed.sluice_log(transport, mode)
    assert obs.session_error is None, f"session error: {obs.session_error}\n--- sluice stderr ---\n{log}"
    assert obs.ready_error is None, f"{obs.ready_error}\n--- sluice stderr ---\n{log}"
    if mode == "legacy":
        assert obs.negotiated in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"), obs.negotiated
    else:
        # auto probes server/discover; sluice serves 2026-07-28 clients, so auto must end there too.
        assert obs.negotiated == H.MODERN, obs.negotiated


# ------------------------------------------------------------------------------------------------
# Listings
# ------------------------------------------------------------------------------------------------


def _expected_names(
    fed: Federation, mode: str, kind: H.ListKind, up: str, direct_items: list[dict[str, Any]], got: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(expected keys, problems) for one upstream's share of a listing through sluice."""
    want = sorted(H.item_key(kind, i) for i in direct_items)
    have = sorted(H.item_key(kind, i) for i in got)
    if kind == "tools" and up in H.CONDITIONAL_TOOLS:
        # Capability-dependent tools: through sluice any subset of them may appear (sluice declares
        # its own client capabilities upstream). All others must match exactly.
        cond = H.CONDITIONAL_TOOLS[up]
        want_base = sorted(set(want) - cond)
        have_base = sorted(set(have) - cond)
        problems = []
        if want_base != have_base:
            problems.append(_diff(up, want_base, have_base))
        return sorted(set(want_base) | (set(have) & cond)), problems
    return want, ([] if want == have else [_diff(up, want, have)])


def _diff(up: str, want: list[str], have: list[str]) -> str:
    return (f"{up}: missing {sorted(set(want) - set(have))}, unexpected {sorted(set(have) - set(want))} "
            f"({len(have)} listed through sluice, {len(want)} directly)")


@pytest.mark.parametrize("kind", H.LIST_KINDS)
@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_list_matches_direct(fed: Federation, transport: str, mode: str, kind: H.ListKind) -> None:
    """Every page drained; the items of all upstreams, each exactly once, names prefixed for tools
    and prompts; the total equals the sum of the direct listings (same client mode)."""
    obs = fed.session(transport, mode)
    listing = obs.list_outcome(kind).unwrap(f"{kind} through sluice")
    direct = fed.direct_lists(transport, mode, kind)
    keys = [H.item_key(kind, i) for i in listing.items]
    assert not H.duplicates(keys), f"listed more than once: {H.duplicates(keys)}"
    assigned, unassigned = H.split_by_upstream(kind, listing.items, direct)
    assert not unassigned, f"items that belong to no upstream: {unassigned}"
    problems: list[str] = []
    expected_total = 0
    for up, items in direct.items():
        want, p = _expected_names(fed, mode, kind, up, items, assigned[up])
        problems += p
        expected_total += len(want)
    assert not problems, "\n".join(problems)
    assert len(listing.items) == expected_total, (len(listing.items), expected_total)


@pytest.mark.parametrize("kind", H.LIST_KINDS)
@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_list_definitions_identical(fed: Federation, transport: str, mode: str, kind: H.ListKind) -> None:
    """Each item as listed through sluice equals the direct one apart from the prefixed name and
    what the version negotiated with sluice has not (`execution`, `icons`)."""
    obs = fed.session(transport, mode)
    listing = obs.list_outcome(kind).unwrap(f"{kind} through sluice")
    direct = fed.direct_lists(transport, mode, kind)
    assigned, _ = H.split_by_upstream(kind, listing.items, direct)
    diffs = []
    for up, items in assigned.items():
        by_key = {H.item_key(kind, i): i for i in direct[up]}
        full = fed.direct(mode).upstreams[up].full_tools
        if kind == "tools" and full is not None and full.ok:
            for i in full.value.items:
                by_key.setdefault(H.item_key(kind, i), i)
        for item in items:
            key = H.item_key(kind, item)
            if key not in by_key:
                continue  # reported by test_list_matches_direct
            want = H.definition(kind, by_key[key], obs.negotiated)
            got = H.definition(kind, item, obs.negotiated)
            if want != got:
                diffs.append(f"{up} {key}:\n  direct: {json.dumps(want, sort_keys=True)[:1500]}\n"
                             f"  sluice: {json.dumps(got, sort_keys=True)[:1500]}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_paged_resources_all_present_once(fed: Federation, transport: str, mode: str) -> None:
    """server-everything 2025.12.18 serves 100 resources in 10 pages; through sluice (whatever its
    own paging) every one of them must come back exactly once."""
    obs = fed.session(transport, mode)
    listing = obs.list_outcome("resources").unwrap("resources through sluice")
    uris = [i["uri"] for i in listing.items if i["uri"].startswith("test://static/resource/")]
    expected = [f"test://static/resource/{n}" for n in range(1, 101)]
    assert sorted(uris) == sorted(expected), (
        f"{len(uris)} paged resources, duplicates {H.duplicates(uris)}, "
        f"missing {sorted(set(expected) - set(uris))[:10]} (listed in {listing.pages} pages)"
    )


# ------------------------------------------------------------------------------------------------
# Operations
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op_id", [op.id for op in H.OPS])
@pytest.mark.parametrize(("transport", "mode"), COMBOS)
def test_operation_matches_direct(fed: Federation, transport: str, mode: str, op_id: str) -> None:
    """tools/call, resources/read, prompts/get through sluice give the same content as directly."""
    op = H.OPS_BY_ID[op_id]
    obs = fed.session(transport, mode)
    if op.upstream in ("memory",):
        twin = obs.twin.get(op.upstream)
        if twin is None:
            pytest.fail(f"no twin observation for {op.upstream} (session error: {obs.session_error})", pytrace=False)
        assert twin.connect_error is None, twin.connect_error
        direct_outcome = twin.ops[op.id]
    else:
        d = fed.direct(mode).upstreams[op.upstream]
        assert d.connect_error is None, d.connect_error
        direct_outcome = d.ops[op.id]
    direct = direct_outcome.unwrap(f"direct {op.id}")
    through = obs.op_outcome(op.id).unwrap(f"{op.id} through sluice")
    if op.label.endswith("is-error"):
        assert direct.get("isError") is True, f"the direct call was expected to be an error result: {direct}"
    want, got = H.essential(op, direct), H.essential(op, through)
    assert got == want, (
        f"direct: {json.dumps(want, sort_keys=True, ensure_ascii=False)[:3000]}\n"
        f"sluice: {json.dumps(got, sort_keys=True, ensure_ascii=False)[:3000]}"
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_upstream_env_is_only_configured_plus_path_home(fed: Federation, transport: str) -> None:
    """server-everything's get-env shows its process environment: sluice must give upstream children
    only their configured env plus PATH and HOME."""
    obs = fed.session(transport, "auto")
    result = obs.extra_outcome("get-env").unwrap("everything__get-env through sluice")
    env = json.loads(result["content"][0]["text"])
    assert env.get("SLUICE_IT_MARKER") == "everything-2026", env
    extra = set(env) - {"PATH", "HOME", "SLUICE_IT_MARKER"}
    assert not extra, f"unexpected variables in the upstream's environment: {sorted(extra)}"
