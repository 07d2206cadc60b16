"""`sluice doctor` against real MCP servers, against `sluice serve`, and its SARIF output.

Each real server's report is compared, finding by finding, with an EXPECTED map written out below:
what the doctor says about the pinned peers today. A change of verdict for a real server must be a
deliberate edit of that map, never an accident. Every case runs twice and the two verdict maps must
be identical (the doctor is meant to be deterministic).

Every report is also checked for its own consistency: the exit code agrees with the summary, the
summary with the findings, every `fail` carries evidence, every `could-not-judge` a reason, and no
evidence, note or reason quotes what a tool, resource or environment returned (the doctor reports
facts about the protocol, never payload).

Every doctor run is bounded (SLUICE_IT_DOCTOR_TIMEOUT, default 120 s); every server a test starts is
stopped at its end, and no process the doctor started may outlive it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import harness as H
from conftest import REAP_TIMEOUT, STOP_TIMEOUT, kill_leftovers, toml_str, wait_gone

DOCTOR_TIMEOUT = float(os.environ.get("SLUICE_IT_DOCTOR_TIMEOUT", "120"))
FIXTURE_BIN = Path(os.environ.get("SLUICE_FIXTURE_BIN") or H.REPO / "target" / "debug" / "sluice-fixture")
VERDICTS = ("pass", "fail", "could-not-judge", "not-observable")

# An environment variable given to the HTTP server the test starts: its value must never show up in a
# report (server-everything's get-env tool returns the whole environment). The doctor starts stdio
# servers with a cleared environment, so there the marker could not reach them.
MARKER_VAR = "SLUICE_IT_DOCTOR_MARKER"

# ------------------------------------------------------------------------------------------------
# What the doctor says about each pinned peer today
# ------------------------------------------------------------------------------------------------

_STATIC = {
    # No --manifest for the real servers: the static rules cannot be judged.
    "S-1/stdio-declared": "could-not-judge",
    "S-1/min-protocol-version": "could-not-judge",
    "S-7/manifest-version": "could-not-judge",
}
_NOT_OBSERVABLE = {  # rules about what no client can see (README, "sluice doctor")
    "S-8/token-audience": "not-observable",
    "S-9/consent": "not-observable",
    "S-10/ssrf": "not-observable",
    "S-13/outbound-timeout": "not-observable",
    "S-19/authorization-url": "not-observable",
    "S-21/sandbox": "not-observable",
}
_STDIO = {  # the HTTP and authorization rules: not applicable on stdio
    "S-5/resource-server": "pass",
    "S-16/http-auth": "pass",
    "S-17/authorization-servers": "pass",
    "S-18/session-ids": "pass",
    "S-18/session-binding": "pass",
    "S-20/scopes": "pass",
}
_NO_LOAD = {"S-24/rate-limit": "could-not-judge"}  # a rate limit is only probed with --allow-load
_ENVELOPE_PASS = {  # none of the real servers has a list-style tool
    "envelope/limit-bounded": "pass",
    "envelope/silent-cap": "pass",
    "envelope/shape": "pass",
    "envelope/opaque-cursor": "pass",
    "envelope/page-bytes": "pass",
}

# server-everything 2026.8.31 (speaks 2025-11-25), on stdio.
EXPECTED_EVERYTHING_STDIO: dict[str, str] = {
    **_STATIC,
    **_NOT_OBSERVABLE,
    **_STDIO,
    **_NO_LOAD,
    "S-6/list-changed": "pass",
    "S-6/list-changed-sent": "not-observable",  # no read-only call changes the tool list
    "S-14/capabilities": "pass",
    "S-15/completion-inputs": "pass",  # a completion for an unknown prompt is an error
    "S-15/completion-rate-limit": "could-not-judge",  # declares completions; no --allow-load
    "S-25/uri-validation": "pass",
    "S-25/blob-mime": "pass",  # the blob resource is base64 with a MIME type
    "S-26/cache-scope": "pass",  # not applicable: 2025-11-25 has no cacheScope
    "S-27/elicitation": "pass",  # no elicitation during the read-only calls
    "S-2/result-type": "pass",  # not applicable: 2025-11-25
    "S-3/cache-hints": "pass",  # not applicable: 2025-11-25
    "S-4/discover": "pass",  # not applicable: does not claim 2026-07-28
    "S-7/version": "pass",
    "S-11/output-schema": "pass",
    "S-11/error-codes": "fail",  # an unknown tool is answered with an isError result
    "S-12/invalid-cursor": "fail",  # tools/list with an unknown cursor serves a page
    "S-12/opaque-cursor": "could-not-judge",  # nothing pages: no cursor to judge
    "S-12/pagination": "pass",
    "S-13/progress": "pass",
    "S-13/cancellation": "pass",  # the ping after a cancelled tools/list is answered
    # The SDK aborts an initialize that notifications/cancelled names: no answer comes.
    "S-13/init-uncancellable": "fail",
    "S-14/version-echo": "pass",
    "S-14/unknown-version": "pass",
    "S-22/origin": "pass",  # not applicable: stdio
    "S-23/version-header": "pass",  # not applicable: stdio
    **_ENVELOPE_PASS,
    "boundary/read-budget": "pass",
    "boundary/secrets": "pass",
    "poisoning/names": "pass",
    "poisoning/definitions": "fail",  # gzip-file-as-resource: a URL as a schema default
}

# The same server over Streamable HTTP: the HTTP-only rules now apply.
EXPECTED_EVERYTHING_HTTP: dict[str, str] = {
    **EXPECTED_EVERYTHING_STDIO,
    "S-22/origin": "fail",  # a POST with a foreign Origin is not refused with 403
    "S-23/version-header": "pass",
    "S-18/session-binding": "could-not-judge",  # sessions, but no second principal
    "S-13/init-uncancellable": "pass",  # not applicable over HTTP: the session id comes with the answer
}

# mcp-server-time 2026.10.19 (speaks 2026-07-28), on stdio.
EXPECTED_TIME_STDIO: dict[str, str] = {
    **_STATIC,
    **_NOT_OBSERVABLE,
    **_STDIO,
    **_NO_LOAD,
    "S-6/list-changed": "fail",  # capabilities.tools without listChanged
    "S-6/list-changed-sent": "pass",  # not applicable: listChanged not declared
    "S-14/capabilities": "pass",  # not applicable: 2026-07-28
    "S-15/completion-inputs": "pass",  # not applicable: no completions
    "S-15/completion-rate-limit": "pass",  # not applicable: no completions
    "S-25/uri-validation": "pass",  # not applicable: no resources
    "S-25/blob-mime": "could-not-judge",  # no binary content served
    "S-26/cache-scope": "could-not-judge",  # 2026-07-28, but no second principal
    "S-27/elicitation": "pass",
    "S-2/result-type": "pass",
    "S-3/cache-hints": "pass",
    "S-4/discover": "pass",
    "S-7/version": "pass",
    "S-11/output-schema": "could-not-judge",  # no read-only tool with an outputSchema
    "S-11/error-codes": "pass",
    "S-12/invalid-cursor": "fail",  # tools/list with an unknown cursor serves a page
    "S-12/opaque-cursor": "could-not-judge",  # nothing pages: no cursor to judge
    "S-12/pagination": "pass",
    "S-13/progress": "could-not-judge",  # no called tool reports progress
    "S-13/cancellation": "pass",  # server/discover after a cancelled tools/list is answered
    "S-13/init-uncancellable": "pass",  # not applicable: 2026-07-28 has no initialize
    "S-14/version-echo": "pass",
    "S-14/unknown-version": "pass",
    "S-22/origin": "pass",  # not applicable: stdio
    "S-23/version-header": "pass",  # not applicable: stdio
    **_ENVELOPE_PASS,
    "boundary/read-budget": "pass",
    "boundary/secrets": "pass",
    "poisoning/names": "pass",
    "poisoning/definitions": "pass",
}

# server-everything 2025.12.18 (speaks 2025-11-25; 100 resources, 10 per page), on stdio.
EXPECTED_EVERYTHING_2025_STDIO: dict[str, str] = {
    **_STATIC,
    **_NOT_OBSERVABLE,
    **_STDIO,
    **_NO_LOAD,
    "S-6/list-changed": "fail",  # capabilities.tools without listChanged
    "S-6/list-changed-sent": "pass",  # not applicable: listChanged not declared
    "S-14/capabilities": "pass",
    "S-15/completion-inputs": "fail",  # a completion for a prompt that does not exist is answered
    "S-15/completion-rate-limit": "could-not-judge",
    "S-25/uri-validation": "pass",
    "S-25/blob-mime": "could-not-judge",  # the first resource is text
    "S-26/cache-scope": "pass",  # not applicable: 2025-11-25
    "S-27/elicitation": "could-not-judge",  # no read-only tool, so nothing called
    "S-2/result-type": "pass",  # not applicable: 2025-11-25
    "S-3/cache-hints": "pass",  # not applicable: 2025-11-25
    "S-4/discover": "pass",  # not applicable
    "S-7/version": "pass",
    "S-11/output-schema": "could-not-judge",  # no read-only tool
    "S-11/error-codes": "pass",
    "S-12/invalid-cursor": "fail",  # tools/list with an unknown cursor serves a page
    "S-12/opaque-cursor": "fail",  # resources/list cursors decode (base64) to a plain offset
    "S-12/pagination": "pass",
    "S-13/progress": "could-not-judge",  # no read-only tool, so nothing called
    "S-13/cancellation": "pass",
    "S-13/init-uncancellable": "fail",  # the SDK aborts a cancelled initialize
    "S-14/version-echo": "pass",
    "S-14/unknown-version": "pass",
    "S-22/origin": "pass",  # not applicable: stdio
    "S-23/version-header": "pass",  # not applicable: stdio
    **_ENVELOPE_PASS,
    "boundary/read-budget": "could-not-judge",  # no read-only tool
    "boundary/secrets": "pass",
    "poisoning/names": "pass",
    "poisoning/definitions": "pass",
}

# Text that the peers' tools, resources and prompts return. None of it may appear in a report.
EVERYTHING_PAYLOAD = (
    "Echo:",
    "The sum of",
    "Long running operation completed",
    "resource links to resources",
    "Returning resource reference",
    "You can access this resource",
    "Here's the image",
    "MCP logo",
    "Operation completed successfully",
    "Error: Operation failed",
    "Cache hit ratio",
    "This is a plaintext resource",
    "This is a base64 blob",
    "created at",
    "Please analyze the following resource",
)
TIME_PAYLOAD = ("datetime", "is_dst", "day_of_week", "timezone\":")
# An ISO date-time as the time server returns it (a protocol version such as 2026-07-28 has no time).
PAYLOAD_PATTERNS = (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}"),)


@dataclass(frozen=True)
class Case:
    id: str
    transport: str
    protocol_version: str
    expected: dict[str, str]
    payload: tuple[str, ...]
    pagination_note: str | None = None  # a substring the S-12/pagination note must contain


CASES = (
    Case("everything-stdio", "stdio", "2025-11-25", EXPECTED_EVERYTHING_STDIO, EVERYTHING_PAYLOAD),
    Case("everything-http", "http", "2025-11-25", EXPECTED_EVERYTHING_HTTP, EVERYTHING_PAYLOAD),
    Case("time-stdio", "stdio", "2026-07-28", EXPECTED_TIME_STDIO, TIME_PAYLOAD),
    Case(
        "everything2025-stdio",
        "stdio",
        "2025-11-25",
        EXPECTED_EVERYTHING_2025_STDIO,
        EVERYTHING_PAYLOAD,
        pagination_note="resources/list: 100",
    ),
)

# ------------------------------------------------------------------------------------------------
# Running the doctor
# ------------------------------------------------------------------------------------------------


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    leftovers: set[int]  # processes the doctor started that were still alive after it exited

    def show(self) -> str:
        return (
            f"$ {' '.join(self.args)}\nexit {self.returncode}\n--- stdout (tail) ---\n{self.stdout[-4000:]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-4000:]}"
        )

    def report(self) -> dict[str, Any]:
        try:
            return json.loads(self.stdout)
        except ValueError as e:
            raise AssertionError(f"doctor --json printed no JSON ({e})\n{self.show()}") from e


def _pids_with_cmdline(tag: str) -> set[int]:
    """Processes whose command line contains `tag` (a path unique to the test)."""
    needle = tag.encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline:
            found.add(int(entry))
    return found


def run_doctor(*args: str, cwd: Path, tag: str | None = None) -> Run:
    """`sluice doctor ARGS...` in `cwd`, bounded by DOCTOR_TIMEOUT.

    `tag`: a string that the command line of every server the doctor starts contains (see
    `peer_link`); once the doctor has exited, every process still carrying it is a leftover of the
    doctor: it is recorded (after REAP_TIMEOUT), then killed."""
    argv = [str(H.SLUICE_BIN), "doctor", *args]
    env = {**os.environ, "RUST_BACKTRACE": "1"}
    me = {os.getpid()}
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=DOCTOR_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        if tag is not None:
            kill_leftovers(_pids_with_cmdline(tag) - me)
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise AssertionError(f"sluice doctor did not finish within {DOCTOR_TIMEOUT}s: {argv}\n{out[-4000:]}") from e
    left: set[int] = set()
    if tag is not None:
        left = wait_gone(_pids_with_cmdline(tag) - me, REAP_TIMEOUT)
        kill_leftovers(left)
    return Run(argv, p.returncode, p.stdout, p.stderr, left)


def peer_link(tmp_path: Path, target: Path) -> tuple[Path, str]:
    """A symlink to a peer's script or executable under tmp_path: the command line of the server the
    doctor starts then names a path no other process has, to find it after the doctor exits.
    Returns (the link, the tag to look for)."""
    link_dir = tmp_path / f"peer-{uuid.uuid4().hex}"
    link_dir.mkdir()
    link = link_dir / target.name
    link.symlink_to(target)
    return link, str(link_dir)


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {f["id"]: f["verdict"] for f in report["findings"]}


def describe(report: dict[str, Any]) -> str:
    """The non-pass findings, for failure messages."""
    lines = []
    for f in report.get("findings", []):
        if f.get("verdict") != "pass":
            lines.append(f"  {f.get('id')}: {f.get('verdict')} {f.get('evidence') or f.get('reason')}")
    return "\n".join(lines) or "  (every finding passes)"


def map_diff(expected: dict[str, str], got: dict[str, str]) -> str:
    keys = sorted(set(expected) | set(got))
    return "\n".join(
        f"  {k}: expected {expected.get(k, '(absent)')}, got {got.get(k, '(absent)')}"
        for k in keys
        if expected.get(k) != got.get(k)
    )


def check_report(run: Run, *, payload: tuple[str, ...] = (), marker: str | None = None) -> dict[str, Any]:
    """Everything a report must satisfy whatever the server. Returns the parsed report."""
    assert not run.leftovers, f"processes started by the doctor outlived it: {sorted(run.leftovers)}\n{run.show()}"
    report = run.report()
    assert report.get("format") == 2, run.show()
    for key in ("target", "transport", "protocol_version", "server", "findings", "summary"):
        assert key in report, f"report has no {key!r}\n{run.show()}"
    assert set(report["server"]) >= {"name", "version"}, report["server"]
    findings = report["findings"]
    assert findings, run.show()

    ids = [f["id"] for f in findings]
    assert len(ids) == len(set(ids)), f"finding ids repeated: {H.duplicates(ids)}"
    # Every rule of the standard, S-1..S-27, in order, before the other detectors.
    rules = list(dict.fromkeys(f["rule"] for f in findings))
    standard = [r for r in rules if r.startswith("S-")]
    assert standard == [f"S-{n}" for n in range(1, 28)], standard
    assert rules[: len(standard)] == standard, rules
    counts = dict.fromkeys(VERDICTS, 0)
    for f in findings:
        fid = f["id"]
        assert f["verdict"] in VERDICTS, f"{fid}: unknown verdict {f['verdict']!r}"
        counts[f["verdict"]] += 1
        assert f.get("rule") and fid.startswith(f["rule"] + "/"), f"{fid}: rule {f.get('rule')!r}"
        assert f.get("title"), f"{fid}: no title"
        assert f.get("fix"), f"{fid}: no fix"
        if f["verdict"] == "fail":
            ev = f.get("evidence")
            assert isinstance(ev, list) and ev and all(isinstance(e, str) and e.strip() for e in ev), (
                f"{fid}: a fail without evidence: {f}"
            )
        if f["verdict"] in ("could-not-judge", "not-observable"):
            reason = f.get("reason")
            assert isinstance(reason, str) and reason.strip(), f"{fid}: could-not-judge without a reason: {f}"
        texts = [*(f.get("evidence") or []), f.get("note") or "", f.get("reason") or ""]
        for text in texts:
            for p in payload:
                assert p not in text, f"{fid}: report quotes payload {p!r}: {text!r}"
            for pat in PAYLOAD_PATTERNS:
                assert not pat.search(text), f"{fid}: report quotes payload ({pat.pattern}): {text!r}"
    if marker is not None:
        assert marker not in run.stdout, "the report quotes the server's environment (the marker value)"

    assert report["summary"] == counts, f"summary {report['summary']} but the findings count {counts}"
    # A rule not observable from outside never changes the exit code.
    want_rc = 1 if counts["fail"] else 2 if counts["could-not-judge"] else 0
    assert run.returncode == want_rc, f"exit {run.returncode} but the summary {counts} means {want_rc}\n{run.show()}"
    return report


# ------------------------------------------------------------------------------------------------
# server-everything over Streamable HTTP
# ------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class NodeHttpServer:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM (the server only handles SIGINT itself; the default SIGTERM ends it), bounded."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_everything_http(log: Path, marker: str, attempts: int = 3) -> NodeHttpServer:
    """`node EVERYTHING_JS streamableHttp` on a free port (PORT env), ready once it has printed
    `listening on port PORT` and accepts a TCP connection. Retries on another port when the chosen
    one was taken in between."""
    problems = []
    for _ in range(attempts):
        port = _free_port()
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [H.NODE, str(H.EVERYTHING_JS), "streamableHttp"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PORT": str(port), MARKER_VAR: marker},
            )
        srv = NodeHttpServer(proc, port, log)
        deadline = time.monotonic() + H.CONNECT_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            if f"listening on port {port}" in srv.log_tail(200):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        return srv
                except OSError:
                    pass
            time.sleep(0.1)
        srv.stop()
        problems.append(f"port {port}: exit {proc.returncode}\n{srv.log_tail()}")
    raise RuntimeError("server-everything (streamableHttp) never listened:\n" + "\n".join(problems))


@pytest.fixture
def everything_http(tmp_path: Path, peers: Path) -> Iterator[tuple[NodeHttpServer, str]]:
    marker = f"everything-http-{uuid.uuid4().hex}"
    srv = start_everything_http(tmp_path / "everything-http.log", marker)
    try:
        yield srv, marker
    finally:
        srv.stop()
    assert srv.proc.returncode is not None


# ------------------------------------------------------------------------------------------------
# The real servers
# ------------------------------------------------------------------------------------------------


def _doctor_target(
    case: Case, request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[list[str], str | None, str | None]:
    """(doctor arguments, tag of the processes the doctor starts, marker in the server's env)."""
    # trigger-long-running-operation (read-only) takes 10 s with its default arguments: with the
    # default 10 s timeout its call may time out, and its last progress then names a cancelled
    # request (S-13/progress), or not, by a few milliseconds. 15 s lets it finish.
    slow_tool = ["--timeout", "15s"]
    if case.id == "everything-http":
        srv, marker = request.getfixturevalue("everything_http")
        return [*slow_tool, srv.url], None, marker
    if case.id == "everything-stdio":
        js, tag = peer_link(tmp_path, H.EVERYTHING_JS)
        return [*slow_tool, "--", H.NODE, str(js), "stdio"], tag, None
    if case.id == "time-stdio":
        exe, tag = peer_link(tmp_path, H.TIME_BIN)
        return ["--", str(exe), "--local-timezone", "UTC"], tag, None
    if case.id == "everything2025-stdio":
        js, tag = peer_link(tmp_path, H.EVERYTHING_2025_JS)
        return ["--", H.NODE, str(js), "stdio"], tag, None
    raise AssertionError(case.id)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_doctor_verdicts_on_real_servers(
    case: Case, request: pytest.FixtureRequest, tmp_path: Path, peers: Path, sluice_bin: Path
) -> None:
    target, tag, marker = _doctor_target(case, request, tmp_path)
    reports = []
    for attempt in (1, 2):
        run = run_doctor("--json", *target, cwd=tmp_path, tag=tag)
        report = check_report(run, payload=case.payload, marker=marker)
        assert report["transport"] == case.transport, run.show()
        assert report["protocol_version"] == case.protocol_version, run.show()
        got = verdicts(report)
        assert got == case.expected, (
            f"{case.id} (run {attempt}): the doctor's verdicts changed:\n{map_diff(case.expected, got)}\n"
            f"non-pass findings now:\n{describe(report)}"
        )
        if case.pagination_note is not None:
            pagination = next(f for f in report["findings"] if f["id"] == "S-12/pagination")
            assert case.pagination_note in (pagination.get("note") or ""), pagination
        reports.append(report)
    first, second = (verdicts(r) for r in reports)
    assert first == second, f"{case.id}: two runs disagree:\n{map_diff(first, second)}"


# ------------------------------------------------------------------------------------------------
# sluice itself
# ------------------------------------------------------------------------------------------------


def workspace_version() -> str:
    with open(H.REPO / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def fixture_sections() -> str:
    """The [catalog] and [[upstream]] sections of the audited sluice: paged lists, a list tool that
    reports progress."""
    lines = [
        "[catalog]",
        "list_page_size = 5  # sluice pages its own lists, so its cursors are judged too",
        "",
        "[[upstream]]",
        'name = "fixture"',
        f"command = {toml_str(str(FIXTURE_BIN))}",
        'args = ["--list-tool", "good", "--page-size", "5"]',
        "prefix = false",
    ]
    return "\n".join(lines) + "\n"


def write_fixture_config(path: Path) -> Path:
    server = ["[server]", f"separator = {toml_str(H.SEPARATOR)}", 'request_timeout = "60s"', ""]
    path.write_text("\n".join(server) + "\n" + fixture_sections(), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def fixture_bin() -> Path:
    if not (FIXTURE_BIN.is_file() and os.access(FIXTURE_BIN, os.X_OK)):
        pytest.fail(f"sluice-fixture not found at {FIXTURE_BIN} (cargo build -p sluice-testkit)", pytrace=False)
    return FIXTURE_BIN


# What `sluice doctor` cannot judge on `sluice serve` without load or a second principal, and why:
# every other rule that applies is judged, and none fails.
SLUICE_NOT_JUDGED = {
    "S-15/completion-rate-limit": "--allow-load",
    "S-24/rate-limit": "--allow-load",
    "S-25/blob-mime": "no binary content",
    "S-26/cache-scope": "second principal",
}


def assert_sluice_is_clean(report: dict[str, Any], run: Run, srv: Any, not_judged: dict[str, str]) -> None:
    assert report["transport"] == "http", run.show()
    assert report["server"]["version"] == workspace_version(), report["server"]
    assert report["summary"]["fail"] == 0, f"sluice serve fails its doctor:\n{describe(report)}\n{srv.stderr_tail()}"
    got = {f["id"]: f.get("reason", "") for f in report["findings"] if f["verdict"] == "could-not-judge"}
    assert set(got) == set(not_judged), f"could-not-judge {sorted(got)}, expected {sorted(not_judged)}\n{describe(report)}"
    for fid, why in not_judged.items():
        assert why in got[fid], f"{fid}: {got[fid]!r} does not say {why!r}"
    assert run.returncode == 2, run.show()


def test_doctor_passes_sluice_serve_with_its_manifest(
    tmp_path: Path, sluice_bin: Path, fixture_bin: Path, sluice_servers: Any
) -> None:
    config = write_fixture_config(tmp_path / "sluice.toml")
    srv = sluice_servers(["--config", str(config)], tmp_path / "sluice.log", {"fixture"})
    health = srv.last_health or {}
    assert ((health.get("upstreams") or {}).get("fixture") or {}).get("state") == "ready", (
        f"fixture upstream not ready: {health}\n{srv.stderr_tail()}"
    )
    # The manifest the repository ships (its version is the crate's: tests/cli.rs).
    manifest = H.REPO / "mcp.json"
    run = run_doctor("--json", "--manifest", str(manifest), srv.url, cwd=tmp_path)
    report = check_report(run)
    assert_sluice_is_clean(report, run, srv, SLUICE_NOT_JUDGED)
    # Without auth, the OAuth rules do not apply (loopback), and say so.
    by_id = {f["id"]: f for f in report["findings"]}
    assert "serves without credentials" in by_id["S-5/resource-server"]["note"], by_id["S-5/resource-server"]
    srv.note_children()  # so that the teardown checks the fixture upstream exits too


def test_doctor_sees_sluices_rate_limits_with_allow_load(
    tmp_path: Path, sluice_bin: Path, fixture_bin: Path, sluice_servers: Any
) -> None:
    """`--allow-load`: bursts of tool calls and completions against a sluice whose upstream has a
    `rate_limit`: both S-15's and S-24's rate limits pass (the fixture alone fails S-24:
    crates/sluice-cli/tests/doctor.rs)."""
    config = write_fixture_config(tmp_path / "sluice.toml")
    config.write_text(config.read_text(encoding="utf-8") + 'rate_limit = "10/min"\n', encoding="utf-8")
    srv = sluice_servers(["--config", str(config)], tmp_path / "sluice.log", {"fixture"})
    run = run_doctor("--json", "--allow-load", "--manifest", str(H.REPO / "mcp.json"), srv.url, cwd=tmp_path)
    report = check_report(run)
    not_judged = {k: v for k, v in SLUICE_NOT_JUDGED.items() if "--allow-load" not in v}
    # The limit also stops the walk of list_items one row at a time (120 calls).
    not_judged["envelope/silent-cap"] = "paged one row at a time"
    assert_sluice_is_clean(report, run, srv, not_judged)
    by_id = {f["id"]: f for f in report["findings"]}
    for fid in ("S-15/completion-rate-limit", "S-24/rate-limit"):
        assert by_id[fid]["verdict"] == "pass" and "refused" in by_id[fid]["note"], by_id[fid]
    srv.note_children()


def test_doctor_passes_sluice_serve_behind_oauth_with_two_principals(
    tmp_path: Path, sluice_bin: Path, fixture_bin: Path
) -> None:
    """`[auth] mode = "oauth"` with the local authorization server of test_auth.py: the doctor gets
    the bearer token from the environment (and a second principal's), judges the 401 challenge,
    the protected resource metadata, the issuer's metadata and the scopes, and passes; neither
    token appears in anything it prints."""
    from test_auth import auth_server, oauth_block, running_sluice, server_block

    with auth_server() as a:

        def config(port: int) -> str:
            # `read_big` needs a scope the token lacks: it is refused with a challenge (S-20).
            requires = [("fixture", "read_big", ["echo:call"])]
            return (server_block() + "\n" + fixture_sections()
                    + oauth_block(f"http://127.0.0.1:{port}/mcp", a.issuer, requires=requires))

        def token(port: int) -> str:
            return a.valid_rs256(f"http://127.0.0.1:{port}/mcp")

        with running_sluice(tmp_path, config, {"fixture"}, token=token) as gw:
            first = a.valid_rs256(gw.url, subject="doctor-alice")
            second = a.valid_rs256(gw.url, subject="doctor-bob")
            env = {"SLUICE_IT_TOKEN_A": first, "SLUICE_IT_TOKEN_B": second}
            os.environ.update(env)
            try:
                run = run_doctor("--json", "--manifest", str(H.REPO / "mcp.json"), "--bearer-env", "SLUICE_IT_TOKEN_A",
                                 "--second-bearer-env", "SLUICE_IT_TOKEN_B", gw.url, cwd=tmp_path)
                unauthenticated = run_doctor("--json", gw.url, cwd=tmp_path)
            finally:
                for k in env:
                    os.environ.pop(k, None)
            report = check_report(run)
            not_judged = {k: v for k, v in SLUICE_NOT_JUDGED.items() if k != "S-26/cache-scope"}
            assert_sluice_is_clean(report, run, gw.srv, not_judged)
            by_id = {f["id"]: f for f in report["findings"]}
            for fid in ("S-5/resource-server", "S-16/http-auth", "S-17/authorization-servers", "S-20/scopes",
                        "S-26/cache-scope"):
                assert by_id[fid]["verdict"] == "pass", by_id[fid]
            assert "not applicable" not in by_id["S-5/resource-server"].get("note", ""), by_id["S-5/resource-server"]
            for text in (run.stdout, run.stderr, unauthenticated.stdout, unauthenticated.stderr):
                assert first not in text and second not in text, "a token appears in the doctor's output"
            # A tool whose scope the token lacks: its 403 challenge names the scope (S-20).
            assert "insufficient_scope challenge(s) name their scopes" in by_id["S-20/scopes"]["note"], by_id["S-20/scopes"]
            # Without the credential: one line saying why, not a sentence per detector.
            nobody = unauthenticated.report()
            assert "HTTP 401" in (nobody.get("unreachable") or ""), unauthenticated.show()
            assert unauthenticated.returncode == 2, unauthenticated.show()


def test_doctor_passes_sluice_serve_with_bearer_tokens(
    tmp_path: Path, sluice_bin: Path, fixture_bin: Path, sluice_servers: Any
) -> None:
    """`[auth] mode = "bearer"` (static tokens, no OAuth): given the credential (and a second
    principal's), the doctor finds no failure. The OAuth rules cannot be judged, with the reason:
    a server that takes bearer tokens without OAuth is not an OAuth resource server, and S-5
    asks one only of a multi-tenant server, which is not visible from outside."""
    tokens = {"SLUICE_IT_BEARER_A": "doctor-alice-0123456789abcdef", "SLUICE_IT_BEARER_B": "doctor-bob-0123456789abcdef"}
    config = write_fixture_config(tmp_path / "sluice.toml")
    config.write_text(
        config.read_text(encoding="utf-8")
        + '\n[auth]\nmode = "bearer"\n'
        + '[[auth.token]]\nprincipal = "alice"\nenv = "SLUICE_IT_BEARER_A"\n'
        + '[[auth.token]]\nprincipal = "bob"\nenv = "SLUICE_IT_BEARER_B"\n',
        encoding="utf-8",
    )
    srv = sluice_servers(["--config", str(config)], tmp_path / "sluice.log", {"fixture"}, env=tokens)
    os.environ.update(tokens)
    try:
        run = run_doctor("--json", "--manifest", str(H.REPO / "mcp.json"), "--bearer-env", "SLUICE_IT_BEARER_A",
                         "--second-bearer-env", "SLUICE_IT_BEARER_B", srv.url, cwd=tmp_path)
    finally:
        for k in tokens:
            os.environ.pop(k, None)
    report = check_report(run)
    not_judged = {k: v for k, v in SLUICE_NOT_JUDGED.items() if k != "S-26/cache-scope"}
    not_judged["S-5/resource-server"] = "bearer tokens without OAuth"
    not_judged["S-17/authorization-servers"] = "no protected resource metadata"
    not_judged["S-20/scopes"] = "no protected resource metadata"
    assert_sluice_is_clean(report, run, srv, not_judged)
    by_id = {f["id"]: f for f in report["findings"]}
    for fid in ("S-16/http-auth", "S-18/session-binding", "S-26/cache-scope"):
        assert by_id[fid]["verdict"] == "pass", by_id[fid]
    for text in (run.stdout, run.stderr):
        assert all(t not in text for t in tokens.values()), "a token appears in the doctor's output"
    srv.note_children()


# ------------------------------------------------------------------------------------------------
# The authorization rules on a misbehaving resource server (authed_mcp.py)
# ------------------------------------------------------------------------------------------------

AUTH_RULES = ("S-5/resource-server", "S-16/http-auth", "S-17/authorization-servers", "S-20/scopes")

# flaw: (the rule it breaks, a line of that finding's evidence); every other authorization rule
# still passes, or cannot be judged where the broken document was what it reads.
AUTH_FLAWS = {
    "no-challenge": ("S-5/resource-server", "the 401 has no WWW-Authenticate header"),
    "no-resource-metadata": ("S-5/resource-server", "WWW-Authenticate names no resource_metadata"),
    "wrong-resource": (
        "S-5/resource-server",
        "the protected resource metadata's resource is not the URL served (RFC 9728 §3.3)",
    ),
    "no-metadata": ("S-5/resource-server", "GET of the protected resource metadata answered HTTP 404"),
    "no-authorization-servers": (
        "S-17/authorization-servers",
        "the protected resource metadata names no authorization_servers",
    ),
    "issuer-mismatch": (
        "S-17/authorization-servers",
        "authorization server 1: its metadata's issuer is not its own URL (RFC 8414 §3.3)",
    ),
    "wildcard-scope": ("S-20/scopes", 'scopes_supported names the wildcard scope "*"'),
    # Found by sending the refused call again raw in a 2025 session of its own.
    "unnamed-scope": ("S-20/scopes", "read_report: an insufficient_scope challenge names no scope"),
}


def doctor_authed(flaw: str | None, tmp_path: Path) -> tuple[dict[str, Any], Run, str]:
    from authed_mcp import AuthedMcpServer

    with AuthedMcpServer(flaw) as srv:
        os.environ["SLUICE_IT_AUTHED_TOKEN"] = srv.token
        try:
            run = run_doctor("--json", "--bearer-env", "SLUICE_IT_AUTHED_TOKEN", srv.url, cwd=tmp_path)
        finally:
            os.environ.pop("SLUICE_IT_AUTHED_TOKEN", None)
        return check_report(run), run, srv.token


def test_doctor_passes_a_well_behaved_resource_server(tmp_path: Path, sluice_bin: Path) -> None:
    report, run, token = doctor_authed(None, tmp_path)
    by_id = {f["id"]: f for f in report["findings"]}
    for fid in AUTH_RULES:
        assert by_id[fid]["verdict"] == "pass", f"{fid}: {by_id[fid]}\n{describe(report)}"
    assert "not applicable" not in by_id["S-5/resource-server"].get("note", ""), by_id["S-5/resource-server"]
    # The 2025 server's refused call was sent again for its 403 challenge, which names the scope.
    assert "1 insufficient_scope challenge(s) name their scopes" in by_id["S-20/scopes"]["note"], by_id["S-20/scopes"]
    assert token not in run.stdout and token not in run.stderr, "the token appears in the doctor's output"


@pytest.mark.parametrize("flaw", sorted(AUTH_FLAWS))
def test_doctor_fails_a_broken_resource_server(flaw: str, tmp_path: Path, sluice_bin: Path) -> None:
    report, run, token = doctor_authed(flaw, tmp_path)
    rule, says = AUTH_FLAWS[flaw]
    by_id = {f["id"]: f for f in report["findings"]}
    assert by_id[rule]["verdict"] == "fail", f"{flaw}: {by_id[rule]}"
    assert says in by_id[rule]["evidence"], f"{flaw}: {by_id[rule]['evidence']}"
    assert run.returncode == 1, run.show()
    # One flaw, one failing authorization rule.
    failing = sorted(fid for fid in AUTH_RULES if by_id[fid]["verdict"] == "fail")
    assert failing == [rule], f"{flaw}: {failing}\n{describe(report)}"
    assert token not in run.stdout and token not in run.stderr, "the token appears in the doctor's output"


# ------------------------------------------------------------------------------------------------
# SARIF
# ------------------------------------------------------------------------------------------------


def test_doctor_writes_sarif(tmp_path: Path, peers: Path, sluice_bin: Path) -> None:
    """mcp-server-time has both a fail and could-not-judge findings: both SARIF levels show up. One
    run prints the --json report and writes the SARIF file; the two are compared."""
    exe, tag = peer_link(tmp_path, H.TIME_BIN)
    target = ["--", str(exe), "--local-timezone", "UTC"]
    sarif_path = tmp_path / "doctor.sarif"
    run = run_doctor("--json", "--sarif", str(sarif_path), *target, cwd=tmp_path, tag=tag)
    assert not run.leftovers, run.show()
    assert sarif_path.is_file(), f"no SARIF file written\n{run.show()}"
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    report = check_report(run, payload=TIME_PAYLOAD)
    findings = {f["id"]: f for f in report["findings"]}

    assert sarif.get("version") == "2.1.0", sarif.get("version")
    runs = sarif.get("runs")
    assert isinstance(runs, list) and len(runs) == 1, f"expected one run, got {runs!r:.500}"
    rules = runs[0]["tool"]["driver"]["rules"]
    rule_ids = [r["id"] for r in rules]
    assert sorted(rule_ids) == sorted(findings), f"rules {rule_ids} != findings {sorted(findings)}"
    assert len(rule_ids) == len(set(rule_ids)), rule_ids

    results = runs[0].get("results", [])
    by_rule: dict[str, dict[str, Any]] = {}
    for r in results:
        rid = r["ruleId"]
        assert rid not in by_rule, f"two results for {rid}"
        by_rule[rid] = r
        assert r.get("level") in ("error", "note"), r
        if "ruleIndex" in r:
            assert rules[r["ruleIndex"]]["id"] == rid, r
        assert (r.get("message") or {}).get("text"), r
    non_pass = {fid: f["verdict"] for fid, f in findings.items() if f["verdict"] != "pass"}
    assert set(by_rule) == set(non_pass), f"SARIF results {sorted(by_rule)} != non-pass findings {sorted(non_pass)}"
    for rid, r in by_rule.items():
        want = "error" if non_pass[rid] == "fail" else "note"
        assert r["level"] == want, f"{rid}: {non_pass[rid]} as level {r['level']}"
    assert {"error", "note"} <= {r["level"] for r in results}, "expected both a fail and a could-not-judge"
    # Locations are URI references: the program, percent-encoded; the whole command is a property.
    for r in results:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert " " not in uri and uri.endswith("mcp-server-time"), uri
    assert runs[0]["properties"]["target"].endswith("--local-timezone UTC"), runs[0]["properties"]
