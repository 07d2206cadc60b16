"""Conformance fixture upstream MCP server for sluice (Python, official `mcp` 2.3.0 SDK).

What it is
----------
An MCP server exposing exactly the fixed names the official MCP conformance suite calls
(`test_simple_text`, `test://static-text`, `test_simple_prompt`, ...), for
`@modelcontextprotocol/conformance@0.1.16` and for the 2026-07-28 requirement set of
`0.2.0-alpha.12`. The suite's own fixture server is not published, so this one was
written from the "Server Implementation Requirements" the suite prints per scenario.
Use it directly (suite -> fixture, to prove the two agree) and as the upstream behind
the sluice gateway (suite -> gateway -> fixture), so the suite exercises relaying.

Built on `mcp.server.MCPServer` (tools, resources, templates, prompts, completion,
resolvers, cache hints, sealed requestState) plus three low-level
`Server.add_request_handler` registrations (logging/setLevel, resources/subscribe,
resources/unsubscribe). One process serves both protocol eras - the 2025-xx
`initialize` handshake and the 2026-07-28 per-request envelope (`server/discover`) -
over stdio and over Streamable HTTP; the SDK picks the era per connection (stdio: the
first request) or per request (HTTP: the `Mcp-Protocol-Version` header).

How to run
----------
    .peers/venv/bin/python tests/conformance/server.py --stdio
    .peers/venv/bin/python tests/conformance/server.py --http 0      # any free port
    .peers/venv/bin/python tests/conformance/server.py --http 3101
    tests/conformance/run.sh http://127.0.0.1:3101/mcp               # the 0.1.16 suite

`--http PORT` serves Streamable HTTP at `http://127.0.0.1:PORT/mcp` and prints
`listening on http://127.0.0.1:PORT/mcp` (the real port when PORT is 0) to stderr once
it accepts connections. It binds 127.0.0.1 only and answers a foreign `Host` with 421
and a foreign `Origin` with 403 (DNS-rebinding protection). Sessions are stateful (one
`Mcp-Session-Id` per `initialize`), any number may be open at once, and idle ones are
closed after `--session-idle-timeout` seconds (default 600): 0.1.16 never DELETEs its
sessions. Other options: `--no-event-store` (no SSE resumability), `--retry-ms N` (SSE
`retry:` hint, default 500), `--log-level` (Python logging on stderr, default WARNING),
`--json-response` (answer POSTs with application/json instead of SSE; request-scoped
notifications and server-to-client requests then have no wire, so the logging,
progress, sampling and elicitation scenarios fail - only for testing a JSON-only path).

Scenario map (0.1.16 unless marked alpha; the SDK feature doing the work in brackets)
--------------------------------------------------------------------------------------
Lifecycle, utilities, transport
  server-initialize, ping .......... [SDK: initialize / ping / server/discover]
  logging-set-level ................ logging/setLevel handler; the per-session level
                                     filters the notifications of test_tool_with_logging
  completion-complete .............. [@app.completion()] prompt test_prompt_with_arguments
                                     (arg1, arg2) and template test://template/{id}/data
  dns-rebinding-protection ......... [TransportSecuritySettings] localhost Host/Origin only
  server-sse-multiple-streams ...... [stateful Streamable HTTP] concurrent POST SSE streams
  server-sse-polling ............... test_reconnection [ctx.close_sse_stream, EventStore,
                                     retry_interval]; per-session InMemoryEventStore
Tools
  tools-list ....................... every tool has name, description and inputSchema
  tools-call-simple-text ........... test_simple_text
  tools-call-image ................. test_image_content (1x1 red PNG)
  tools-call-audio ................. test_audio_content (20 ms WAV)
  tools-call-embedded-resource ..... test_embedded_resource (test://embedded-resource)
  tools-call-mixed-content ......... test_multiple_content_types (text, image, resource)
  tools-call-with-logging .......... test_tool_with_logging [ctx.log] 3 x info, 50 ms apart
  tools-call-error ................. test_error_handling [ToolError -> isError: true]
  tools-call-with-progress ......... test_tool_with_progress [ctx.report_progress]
                                     0/100, 50/100, 100/100, 50 ms apart
  tools-call-sampling .............. test_sampling(prompt) [Resolve(Sample)]
  tools-call-elicitation ........... test_elicitation(message) [Resolve(Elicit)]
  elicitation-sep1034-defaults ..... test_elicitation_sep1034_defaults [Resolve(Elicit),
                                     pydantic defaults for string/integer/number/enum/bool]
  elicitation-sep1330-enums ........ test_elicitation_sep1330_enums (raw schema, all five
                                     enum shapes incl. legacy enumNames)
  json-schema-2020-12 (pending) .... json_schema_2020_12_tool [pre-built Tool with a
                                     hand-written inputSchema]: SEP-1613 + SEP-2106 keywords
Resources
  resources-list ................... test://static-text, test://static-binary,
                                     test://watched-resource (all with descriptions)
  resources-read-text .............. test://static-text
  resources-read-binary ............ test://static-binary (PNG blob)
  resources-templates-read ......... template test://template/{id}/data
  resources-subscribe, -unsubscribe  resources/subscribe + resources/unsubscribe handlers;
                                     test_update_watched_resource (extra) then sends
                                     notifications/resources/updated to every subscriber
Prompts
  prompts-list ..................... every prompt has name and description
  prompts-get-simple ............... test_simple_prompt
  prompts-get-with-args ............ test_prompt_with_arguments(arg1, arg2)
  prompts-get-embedded-resource .... test_prompt_with_embedded_resource(resourceUri)
  prompts-get-with-image ........... test_prompt_with_image
2026-07-28 (alpha `--requirements 2026-07-28`)
  server-stateless ................. [SDK modern envelope, subscriptions/listen] plus
                                     test_missing_capability (-32021), test_streaming_elicitation,
                                     test_logging_tool, test_trigger_tool_change and
                                     test_trigger_prompt_change (toggle test_dynamic_tool /
                                     test_dynamic_prompt, notify listen streams)
  caching .......................... [cache_hints] ttlMs + cacheScope on list/read results
  sep-2164-resource-not-found ...... [SDK] unknown URI -> -32602 with data.uri
  input-required-result-*:
    basic-elicitation, result-type, missing-input-response, ignore-extra-params,
    validate-input ................. test_input_required_result_elicitation (key user_name)
    basic-sampling ................. test_input_required_result_sampling (capital_question)
    basic-list-roots ............... test_input_required_result_list_roots (client_roots)
    request-state .................. test_input_required_result_request_state ("state-ok")
    multiple-input-requests ........ test_input_required_result_multiple_inputs
    multi-round .................... test_input_required_result_multi_round (3 rounds)
    non-tool-request ............... prompt test_input_required_result_prompt
    tampered-state ................. test_input_required_result_tampered_state
                                     [RequestStateBoundary rejects it with -32602]
    capability-check ............... test_input_required_result_capabilities
  http-custom-header-server-validation (pending)
                                     test_custom_headers(region) [x-mcp-header: Region]
  http-header-validation (pending) . [SDK Mcp-Method / Mcp-Name validation]
The input_required tools also work on a 2025-xx session: there they ask through the
back-channel (elicitation/create, sampling/createMessage, roots/list) instead.
  tasks-* (extension, unscored) .... task_extension.TasksExtension (the SDK ships none):
                                     greet (sync), slow_compute (optional task), failing_job,
                                     protocol_error_job, confirm_delete, multi_input and
                                     test_tool_with_task (MRTR rounds, then a task), all
                                     required tasks; tasks/get, tasks/update, tasks/cancel,
                                     notifications/tasks on listen streams naming taskIds
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import logging
import socket
import struct
import sys
import uuid
import warnings
import wave
import zlib
from collections import OrderedDict
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from mcp.server import CacheHint, MCPServer, ServerRequestContext
from mcp.server.mcpserver import Context, ElicitationResult, Elicit, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata

import task_extension

# Logging, sampling and roots are deprecated as of 2026-07-28 but are exactly what
# the 2025-era scenarios test; keep the warnings out of the fixture's stderr.
warnings.simplefilter("ignore", MCPDeprecationWarning)

log = logging.getLogger("conformance-fixture")

# --------------------------------------------------------------------------------------
# Test payloads
# --------------------------------------------------------------------------------------


def _png_1x1_red() -> bytes:
    """A valid 1x1 red RGB PNG, built with zlib (no image library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, truecolour
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0 + one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_short_tone() -> bytes:
    """A 20 ms 440 Hz mono 16-bit 8 kHz WAV (square wave), built with the stdlib `wave` module."""
    rate, n = 8000, 160
    period = rate // 440
    frames = b"".join(struct.pack("<h", 8000 if (i % period) < period // 2 else -8000) for i in range(n))
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return buf.getvalue()


PNG_BYTES = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG_BYTES).decode()
WAV_B64 = base64.b64encode(_wav_short_tone()).decode()

STATIC_TEXT = "This is the content of the static text resource."
WATCHED_URI = "test://watched-resource"

# SEP-1613 (0.1.16: $schema, $defs, additionalProperties) plus the SEP-2106 vocabulary the
# alpha checks ($anchor inside $defs, allOf/anyOf, if/then/else).
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Untitled single-select enum",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Titled single-select enum",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy titled enum (enumNames, deprecated)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Untitled multi-select enum",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Titled multi-select enum",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}

LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# --------------------------------------------------------------------------------------
# Per-session state (2025 handshake era). Keyed by the Mcp-Session-Id header on HTTP
# and by a constant on stdio (one connection per process).
# --------------------------------------------------------------------------------------

_log_level_by_session: dict[str, str] = {}
# uri -> session key -> the ServerSession of the subscribe request. A ServerSession
# keeps the connection's standalone channel, so it can notify after the request ended.
_subscribers: dict[str, dict[str, Any]] = {}


def _session_key(request: Any) -> str:
    headers = getattr(request, "headers", None)
    sid = headers.get("mcp-session-id") if headers is not None else None
    return sid or "stdio"


def _is_modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _request_id(ctx: Context) -> types.RequestId | None:
    return ctx.request_context.request_id


async def _log(ctx: Context, level: str, message: str) -> None:
    """Send notifications/message, honouring the session's logging/setLevel (2025 era).

    On 2026-07-28 the SDK applies the per-request `_meta` log-level opt-in itself.
    """
    if not _is_modern(ctx):
        minimum = _log_level_by_session.get(_session_key(ctx.request_context.request), "debug")
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(minimum):
            return
    await ctx.log(level, message, logger_name="conformance-fixture")  # type: ignore[arg-type]


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


# ---- asking the client: one helper for both eras ------------------------------------------

_RESULT_TYPES: dict[str, type[BaseModel]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}


def _supports(ctx: Context, method: str) -> bool:
    caps = ctx.client_capabilities
    if caps is None:
        return False
    if method == "elicitation/create":
        return caps.elicitation is not None
    if method == "sampling/createMessage":
        return caps.sampling is not None
    return caps.roots is not None


def _require(ctx: Context, methods: list[str]) -> None:
    """Raise MissingRequiredClientCapabilityError (-32021) for capabilities the client did not declare."""
    names = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
    missing = [names[m] for m in methods if not _supports(ctx, m)]
    if missing:
        data = types.MissingRequiredClientCapabilityErrorData(
            required_capabilities=types.ClientCapabilities.model_validate({name: {} for name in missing})
        )
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Client did not declare required capabilities: {', '.join(missing)}",
            data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )


async def _ask(
    ctx: Context, requests: dict[str, types.InputRequest], state: str | None = None
) -> dict[str, Any] | types.InputRequiredResult:
    """Get one response per request key, in either era.

    2026-07-28: take the answers from `inputResponses`; when some are missing or of the
    wrong type, (re-)ask for those keys with an InputRequiredResult carrying `state`.
    2025-xx: send each request through the back-channel and wait for the answer.
    """
    if _is_modern(ctx):
        given = ctx.input_responses or {}
        answers = {k: given.get(k) for k in requests}
        missing = {
            k: req for k, req in requests.items() if not isinstance(answers[k], _RESULT_TYPES[req.method])
        }
        if missing:
            return types.InputRequiredResult(input_requests=missing, request_state=state)
        return answers
    answers = {}
    for key, req in requests.items():
        answers[key] = await ctx.session.send_request(
            req, _RESULT_TYPES[req.method], metadata=ServerMessageMetadata(related_request_id=_request_id(ctx))
        )
    return answers


def _elicit_request(message: str, prop: str, prop_type: str = "string") -> types.ElicitRequest:
    schema = {"type": "object", "properties": {prop: {"type": prop_type}}, "required": [prop]}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample_request(text: str, max_tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=_text(text))], max_tokens=max_tokens
        )
    )


def _elicited(answer: types.ElicitResult, prop: str) -> Any:
    return (answer.content or {}).get(prop) if answer.action == "accept" else f"<{answer.action}>"


def _sampled_text(answer: types.CreateMessageResult) -> str:
    content = answer.content
    return content.text if isinstance(content, types.TextContent) else json.dumps(content.model_dump(mode="json"))


def _done(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(text)])


# ---- tools: JSON Schema 2020-12 (SEP-1613) -----------------------------------------------


def _json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,  # noqa: N803 - wire name
    phone: str | None = None,
    email: str | None = None,
) -> str:
    received = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    return "json_schema_2020_12_tool received " + json.dumps({k: v for k, v in received.items() if v is not None})


# A pre-built `Tool` whose advertised inputSchema is the hand-written 2020-12 document
# (the function signature only drives argument validation); registered via MCPServer(tools=...).
JSON_SCHEMA_TOOL = Tool.from_function(
    _json_schema_2020_12_tool,
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    structured_output=False,
).model_copy(update={"parameters": JSON_SCHEMA_2020_12})


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------

app = MCPServer(
    "sluice-conformance-fixture",
    tools=[JSON_SCHEMA_TOOL],
    version="1.0.0",
    instructions="Conformance fixture: fixed test_* tools, test:// resources and test_* prompts.",
    extensions=[task_extension.TasksExtension()],
    # SEP-2549 (2026-07-28): every cacheable result carries ttlMs + cacheScope.
    cache_hints={
        "tools/list": CacheHint(ttl_ms=0, scope="public"),
        "prompts/list": CacheHint(ttl_ms=0, scope="public"),
        "resources/list": CacheHint(ttl_ms=0, scope="public"),
        "resources/templates/list": CacheHint(ttl_ms=0, scope="public"),
        "resources/read": CacheHint(ttl_ms=0, scope="private"),
    },
)


def plain_tool(description: str) -> Any:
    """`@app.tool` without structured output: results are plain content blocks, as the suite specifies."""
    return app.tool(description=description, structured_output=False)


# ---- tools: content types -------------------------------------------------------------


@plain_tool("Returns a simple text response (tools-call-simple-text).")
def test_simple_text() -> types.CallToolResult:
    return types.CallToolResult(content=[_text("This is a simple text response for testing.")])


@plain_tool("Returns a 1x1 red PNG image (tools-call-image).")
def test_image_content() -> types.CallToolResult:
    return types.CallToolResult(content=[types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")])


@plain_tool("Returns a short WAV audio clip (tools-call-audio).")
def test_audio_content() -> types.CallToolResult:
    return types.CallToolResult(content=[types.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")])


@plain_tool("Returns an embedded text resource (tools-call-embedded-resource).")
def test_embedded_resource() -> types.CallToolResult:
    resource = types.TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)])


@plain_tool("Returns text, image and embedded resource content (tools-call-mixed-content).")
def test_multiple_content_types() -> types.CallToolResult:
    resource = types.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
    )
    return types.CallToolResult(
        content=[
            _text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
            types.EmbeddedResource(type="resource", resource=resource),
        ]
    )


@plain_tool("Always fails: returns isError: true (tools-call-error).")
def test_error_handling() -> str:
    raise ToolError("This tool intentionally returns an error for testing")


# ---- tools: logging, progress, reconnection ---------------------------------------------


@plain_tool("Sends three info log notifications ~50 ms apart (tools-call-with-logging).")
async def test_tool_with_logging(ctx: Context) -> str:
    await _log(ctx, "info", "Tool execution started")
    await anyio.sleep(0.05)
    await _log(ctx, "info", "Tool processing data")
    await anyio.sleep(0.05)
    await _log(ctx, "info", "Tool execution completed")
    return "Tool with logging executed successfully"


@plain_tool("Reports progress 0/100, 50/100, 100/100 ~50 ms apart (tools-call-with-progress).")
async def test_tool_with_progress(ctx: Context) -> str:
    # report_progress is a no-op when the request carried no _meta.progressToken.
    await ctx.report_progress(0, 100)
    await anyio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await anyio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@plain_tool(
    "Closes the request's SSE stream mid-call, then answers; the client resumes with "
    "GET + Last-Event-ID (server-sse-polling, SEP-1699)."
)
async def test_reconnection(ctx: Context) -> str:
    await anyio.sleep(0.05)
    # A no-op unless the transport has an event store and the client speaks >= 2025-11-25.
    await ctx.close_sse_stream()
    await anyio.sleep(0.1)
    return "Reconnection test completed successfully"


@plain_tool(
    "Sends notifications/resources/updated for test://watched-resource to every session "
    "subscribed to it (and to 2026-07-28 subscriptions/listen streams); returns the count."
)
async def test_update_watched_resource(ctx: Context) -> str:
    sent = 0
    for key, session in list(_subscribers.get(WATCHED_URI, {}).items()):
        try:
            await session.send_resource_updated(WATCHED_URI)
            sent += 1
        except Exception as exc:  # the session is gone: forget it
            log.info("dropping subscriber %s: %r", key, exc)
            _subscribers.get(WATCHED_URI, {}).pop(key, None)
    await ctx.notify_resource_updated(WATCHED_URI)
    return f"Sent resources/updated for {WATCHED_URI} to {sent} subscribed session(s)"


# ---- tools: sampling and elicitation (SDK resolvers: both eras) --------------------------


def _sampling_request(prompt: str) -> Sample:
    return Sample([types.SamplingMessage(role="user", content=_text(prompt))], max_tokens=100)


@plain_tool("Asks the client's LLM via sampling/createMessage (tools-call-sampling).")
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")],
    answer: Annotated[types.CreateMessageResult, Resolve(_sampling_request)],
) -> str:
    return f"LLM response: {_sampled_text(answer)}"


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


def _user_info_request(message: str) -> Elicit[UserInfo]:
    return Elicit(message, UserInfo)


@plain_tool("Asks the user via elicitation/create for username and email (tools-call-elicitation).")
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")],
    response: Annotated[ElicitationResult[UserInfo], Resolve(_user_info_request)],
) -> str:
    content = response.data.model_dump() if response.action == "accept" else None
    return f"User response: action={response.action}, content={json.dumps(content)}"


class Sep1034Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field(default="active", description="User status")
    verified: bool = Field(default=True, description="Verification status")


def _sep1034_request() -> Elicit[Sep1034Defaults]:
    return Elicit("Please review and update the form fields with defaults", Sep1034Defaults)


@plain_tool("Elicitation whose schema has defaults for every primitive type (SEP-1034).")
async def test_elicitation_sep1034_defaults(
    response: Annotated[ElicitationResult[Sep1034Defaults], Resolve(_sep1034_request)],
) -> str:
    content = response.data.model_dump() if response.action == "accept" else None
    return f"Elicitation completed: action={response.action}, content={json.dumps(content)}"


@plain_tool("Elicitation with all five SEP-1330 enum schema shapes.")
async def test_elicitation_sep1330_enums(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    # The legacy `enumNames` shape cannot come out of a pydantic model (SDK `Elicit`), so this
    # tool sends the raw schema: a back-channel request on 2025-xx, input_required on 2026-07-28.
    _require(ctx, ["elicitation/create"])
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="Please select options from the enum fields", requested_schema=SEP1330_SCHEMA
        )
    )
    answers = await _ask(ctx, {"enums": request})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    result = answers["enums"]
    return _done(f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}")


# ---- tools: 2026-07-28 multi-round-trip (SEP-2322) and server-stateless diagnostics --------
#
# The `test_input_required_result_*` tools need fixed inputRequests keys (`user_name`,
# `capital_question`, ...), which the SDK resolvers (`Resolve(Elicit/Sample/ListRoots)`) do
# not let us choose, so they build `InputRequiredResult` themselves. `requestState` is
# sealed and verified by the SDK's RequestStateBoundary middleware (AES-GCM, installed by
# MCPServer): handlers only ever see the plaintext they minted, and a tampered token is
# answered -32602 before the handler runs. On a 2025-xx session the same tools ask
# through the back-channel instead, so they work in both eras.


@plain_tool("SEP-2322: asks for the user's name (inputRequests key user_name), then greets.")
async def test_input_required_result_elicitation(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["elicitation/create"])
    answers = await _ask(ctx, {"user_name": _elicit_request("What is your name?", "name")})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done(f"Hello, {_elicited(answers['user_name'], 'name')}!")


@plain_tool("SEP-2322: asks the client's LLM (key capital_question), then returns its answer.")
async def test_input_required_result_sampling(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["sampling/createMessage"])
    answers = await _ask(ctx, {"capital_question": _sample_request("What is the capital of France?", 100)})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done(f"Sampling response: {_sampled_text(answers['capital_question'])}")


@plain_tool("SEP-2322: asks for the client's roots (key client_roots), then lists them.")
async def test_input_required_result_list_roots(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["roots/list"])
    answers = await _ask(ctx, {"client_roots": types.ListRootsRequest()})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    roots = ", ".join(str(r.uri) for r in answers["client_roots"].roots)
    return _done(f"Client roots: {roots or '(none)'}")


_CONFIRM_STATE = "request-state:confirm:v1"


def _confirm_request() -> types.ElicitRequest:
    return _elicit_request("Please confirm", "ok", "boolean")


@plain_tool("SEP-2322: asks for confirmation with an opaque requestState; answers 'state-ok' once it comes back.")
async def test_input_required_result_request_state(
    ctx: Context,
) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["elicitation/create"])
    if _is_modern(ctx) and ctx.request_state != _CONFIRM_STATE:
        return types.InputRequiredResult(input_requests={"confirm": _confirm_request()}, request_state=_CONFIRM_STATE)
    answers = await _ask(ctx, {"confirm": _confirm_request()}, _CONFIRM_STATE)
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done(f"state-ok: requestState verified, ok={_elicited(answers['confirm'], 'ok')}")


@plain_tool("SEP-2322: tampered requestState is rejected (-32602) by the SDK before this tool runs.")
async def test_input_required_result_tampered_state(
    ctx: Context,
) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["elicitation/create"])
    if _is_modern(ctx) and ctx.request_state != _CONFIRM_STATE:
        return types.InputRequiredResult(input_requests={"confirm": _confirm_request()}, request_state=_CONFIRM_STATE)
    answers = await _ask(ctx, {"confirm": _confirm_request()}, _CONFIRM_STATE)
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done("state-ok: requestState integrity verified")


@plain_tool("SEP-2322: one round asking elicitation + sampling + roots/list at once, with requestState.")
async def test_input_required_result_multiple_inputs(
    ctx: Context,
) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["elicitation/create", "sampling/createMessage", "roots/list"])
    requests: dict[str, types.InputRequest] = {
        "user_name": _elicit_request("What is your name?", "name"),
        "greeting": _sample_request("Generate a greeting", 50),
        "client_roots": types.ListRootsRequest(),
    }
    answers = await _ask(ctx, requests, "multiple-inputs:v1")
    if isinstance(answers, types.InputRequiredResult):
        return answers
    name = _elicited(answers["user_name"], "name")
    roots = len(answers["client_roots"].roots)
    return _done(f"name={name}, greeting={_sampled_text(answers['greeting'])}, roots={roots}")


@plain_tool("SEP-2322: three rounds (name, then colour, then the result), requestState changes each round.")
async def test_input_required_result_multi_round(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    _require(ctx, ["elicitation/create"])
    step1 = _elicit_request("Step 1: What is your name?", "name")
    if not _is_modern(ctx):
        step2 = _elicit_request("Step 2: What is your favorite color?", "color")
        answers = await _ask(ctx, {"step1": step1, "step2": step2})
        assert not isinstance(answers, types.InputRequiredResult)
        return _done(f"{_elicited(answers['step1'], 'name')} likes {_elicited(answers['step2'], 'color')}")
    state = json.loads(ctx.request_state) if ctx.request_state else {"round": 1}
    given = ctx.input_responses or {}
    if state["round"] == 1:
        answer = given.get("step1")
        if not isinstance(answer, types.ElicitResult):
            return types.InputRequiredResult(input_requests={"step1": step1}, request_state=json.dumps({"round": 1}))
        state = {"round": 2, "name": _elicited(answer, "name")}
        step2 = _elicit_request("Step 2: What is your favorite color?", "color")
        return types.InputRequiredResult(input_requests={"step2": step2}, request_state=json.dumps(state))
    answer = given.get("step2")
    if not isinstance(answer, types.ElicitResult):
        step2 = _elicit_request("Step 2: What is your favorite color?", "color")
        return types.InputRequiredResult(input_requests={"step2": step2}, request_state=json.dumps(state))
    return _done(f"{state['name']} likes {_elicited(answer, 'color')}")


@plain_tool("SEP-2322: asks only for what the client declared (sampling, elicitation, roots).")
async def test_input_required_result_capabilities(
    ctx: Context,
) -> types.CallToolResult | types.InputRequiredResult:
    candidates: dict[str, types.InputRequest] = {
        "capital_question": _sample_request("What is the capital of France?", 100),
        "user_name": _elicit_request("What is your name?", "name"),
        "client_roots": types.ListRootsRequest(),
    }
    requests = {k: r for k, r in candidates.items() if _supports(ctx, r.method)}
    if not requests:
        return _done("The client declared none of sampling, elicitation, roots: nothing to ask")
    answers = await _ask(ctx, requests, "capabilities:v1")
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done("Received answers for: " + ", ".join(sorted(answers)))


@app.prompt(
    name="test_input_required_result_prompt",
    description="SEP-2322 on prompts/get: asks for context (key user_context), then renders the prompt.",
)
async def test_input_required_result_prompt(ctx: Context) -> list[dict[str, Any]] | types.InputRequiredResult:
    _require(ctx, ["elicitation/create"])
    answers = await _ask(ctx, {"user_context": _elicit_request("What context should the prompt use?", "context")})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    context = _elicited(answers["user_context"], "context")
    return [{"role": "user", "content": _text(f"Use this context: {context}")}]


# ---- tools: the tasks extension (SEP-2663; see task_extension) ----------------------------


def task_tool(description: str, support: str, mrtr_first: tuple[str, ...] = ()) -> Any:
    """A tool the tasks extension runs as a task (`support`: "optional" or "required")."""

    def register(fn: Any) -> Any:
        task_extension.TASK_TOOLS[fn.__name__] = support
        if mrtr_first:
            task_extension.MRTR_FIRST[fn.__name__] = mrtr_first
        return plain_tool(description)(fn)

    return register


@plain_tool("SEP-2663: sync only; answers Hello, {name}!")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@task_tool("SEP-2663: sleeps `seconds`, then answers (a task when the client declares tasks).", "optional")
async def slow_compute(seconds: float = 0, label: str = "") -> str:
    await anyio.sleep(seconds)
    return f"slow_compute {label} done after {seconds}s"


@task_tool("SEP-2663: a task whose tool reports an execution error after about a second.", "required")
async def failing_job() -> str:
    await anyio.sleep(1)
    raise ToolError("failing_job failed on purpose")


@task_tool("SEP-2663: a task that ends in a protocol error.", "required")
async def protocol_error_job() -> str:
    await anyio.sleep(0.2)
    raise MCPError(code=types.INTERNAL_ERROR, message="protocol_error_job failed on purpose")


def _task_answer(answer: Any, prop: str) -> Any:
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(by_alias=True, mode="json")
    if not isinstance(answer, dict) or answer.get("action") != "accept":
        return None
    return (answer.get("content") or {}).get(prop)


@task_tool("SEP-2663: a task that asks to confirm the deletion of `filename`, then answers.", "required")
async def confirm_delete(filename: str = "") -> str:
    task = task_extension.current()
    assert task is not None, "a required task tool runs in a task"
    answers = await task.ask({"confirm": _elicit_request(f"Delete {filename}?", "confirm", "boolean")})
    confirmed = _task_answer(answers["confirm"], "confirm")
    return f"deleted {filename}" if confirmed else f"kept {filename}"


@task_tool("SEP-2663: a task that asks two questions at once, then answers both names.", "required")
async def multi_input() -> str:
    task = task_extension.current()
    assert task is not None, "a required task tool runs in a task"
    answers = await task.ask(
        {"first": _elicit_request("First name?", "name"), "second": _elicit_request("Second name?", "name")}
    )
    return f"first={_task_answer(answers['first'], 'name')}, second={_task_answer(answers['second'], 'name')}"


@task_tool("SEP-2663: asks user_name in an MRTR round, then runs as a task greeting it.", "required", ("user_name",))
async def test_tool_with_task(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    answers = await _ask(ctx, {"user_name": _elicit_request("What is your name?", "name")})
    if isinstance(answers, types.InputRequiredResult):
        return answers
    return _done(f"Hello, {_elicited(answers['user_name'], 'name')}! (gathered before the task)")


def _hello_sample() -> Sample:
    return _sampling_request("Say hello")


@plain_tool("server-stateless: needs the sampling capability; without it the call fails with -32021.")
async def test_missing_capability(
    answer: Annotated[types.CreateMessageResult, Resolve(_hello_sample)],
) -> str:
    return f"Sampling response: {_sampled_text(answer)}"


def _streaming_question() -> Elicit[UserInfo]:
    return Elicit("Please provide your information", UserInfo)


@plain_tool("server-stateless: elicits (2026: input_required in the response, never a standalone request).")
async def test_streaming_elicitation(
    ctx: Context,
    response: Annotated[ElicitationResult[UserInfo], Resolve(_streaming_question)],
) -> str:
    await ctx.report_progress(1, 1)
    content = response.data.model_dump() if response.action == "accept" else None
    return f"User response: action={response.action}, content={json.dumps(content)}"


@plain_tool("Logs one info message (2026: only delivered when the request's _meta opts into a log level).")
async def test_logging_tool(ctx: Context) -> str:
    await _log(ctx, "info", "test_logging_tool was called")
    return "Logged one info message"


def test_dynamic_tool() -> str:
    """A tool that test_trigger_tool_change adds and removes."""
    return "dynamic tool called"


def test_dynamic_prompt() -> str:
    """A prompt that test_trigger_prompt_change adds and removes."""
    return "This is the dynamic prompt."


@plain_tool("Adds or removes test_dynamic_tool and notifies subscriptions/listen streams (toolsListChanged).")
async def test_trigger_tool_change(ctx: Context) -> str:
    if any(t.name == "test_dynamic_tool" for t in await app.list_tools()):
        app.remove_tool("test_dynamic_tool")
        change = "removed"
    else:
        app.add_tool(test_dynamic_tool, structured_output=False)
        change = "added"
    await ctx.notify_tools_changed()
    return f"test_dynamic_tool {change}"


@plain_tool("Adds or removes test_dynamic_prompt and notifies subscriptions/listen streams (promptsListChanged).")
async def test_trigger_prompt_change(ctx: Context) -> str:
    if any(p.name == "test_dynamic_prompt" for p in await app.list_prompts()):
        app.remove_prompt("test_dynamic_prompt")
        change = "removed"
    else:
        app.add_prompt(Prompt.from_function(test_dynamic_prompt, name="test_dynamic_prompt"))
        change = "added"
    await ctx.notify_prompts_changed()
    return f"test_dynamic_prompt {change}"


@plain_tool("SEP-2243: `region` travels in the Mcp-Param-Region header as well as in the body.")
def test_custom_headers(
    region: Annotated[
        str,
        Field(description="A region name, mirrored in Mcp-Param-Region", json_schema_extra={"x-mcp-header": "Region"}),
    ],
) -> str:
    return f"region={region}"


# ---- resources ---------------------------------------------------------------------------


@app.resource(
    "test://static-text",
    name="static-text",
    description="A static text resource (resources-read-text).",
    mime_type="text/plain",
)
def static_text() -> str:
    return STATIC_TEXT


@app.resource(
    "test://static-binary",
    name="static-binary",
    description="A static binary resource: a 1x1 red PNG (resources-read-binary).",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return PNG_BYTES


@app.resource(
    WATCHED_URI,
    name="watched-resource",
    description="A subscribable resource (resources-subscribe / resources-unsubscribe).",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "This is a watched resource; subscribe to it for notifications/resources/updated."


@app.resource(
    "test://template/{id}/data",
    name="template-data",
    description="A resource template: {id} is substituted into the JSON (resources-templates-read).",
    mime_type="application/json",
)
def template_data(id: str) -> str:  # noqa: A002 - the template variable is called id
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


# ---- prompts -----------------------------------------------------------------------------


@app.prompt(name="test_simple_prompt", description="A simple prompt without arguments (prompts-get-simple).")
def test_simple_prompt() -> list[dict[str, Any]]:
    return [{"role": "user", "content": _text("This is a simple prompt for testing.")}]


@app.prompt(
    name="test_prompt_with_arguments",
    description="A prompt with two required arguments (prompts-get-with-args, completion-complete).",
)
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> list[dict[str, Any]]:
    return [{"role": "user", "content": _text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")}]


@app.prompt(
    name="test_prompt_with_embedded_resource",
    description="A prompt embedding a resource (prompts-get-embedded-resource).",
)
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],  # noqa: N803 - wire name
) -> list[dict[str, Any]]:
    resource = types.TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        {"role": "user", "content": types.EmbeddedResource(type="resource", resource=resource)},
        {"role": "user", "content": _text("Please process the embedded resource above.")},
    ]


@app.prompt(name="test_prompt_with_image", description="A prompt with image content (prompts-get-with-image).")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")},
        {"role": "user", "content": _text("Please analyze the image above.")},
    ]


# ---- completion --------------------------------------------------------------------------

_COMPLETIONS: dict[tuple[str, str, str], list[str]] = {
    ("ref/prompt", "test_prompt_with_arguments", "arg1"): ["paris", "park", "party", "test", "testing", "tested"],
    ("ref/prompt", "test_prompt_with_arguments", "arg2"): ["hello", "help", "world", "test"],
    ("ref/resource", "test://template/{id}/data", "id"): ["1", "2", "3", "123", "456"],
}


@app.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    key_name = ref.name if isinstance(ref, types.PromptReference) else ref.uri
    candidates = _COMPLETIONS.get((ref.type, key_name, argument.name), [])
    values = [v for v in candidates if v.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


# ---- low-level handlers: logging/setLevel, resources/(un)subscribe (2025 era) ------------


async def _set_logging_level(ctx: ServerRequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
    _log_level_by_session[_session_key(ctx.request)] = params.level
    return types.EmptyResult()


async def _subscribe(ctx: ServerRequestContext, params: types.SubscribeRequestParams) -> types.EmptyResult:
    _subscribers.setdefault(str(params.uri), {})[_session_key(ctx.request)] = ctx.session
    return types.EmptyResult()


async def _unsubscribe(ctx: ServerRequestContext, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    _subscribers.get(str(params.uri), {}).pop(_session_key(ctx.request), None)
    return types.EmptyResult()


_low = app._lowlevel_server  # MCPServer exposes no public hook for these three methods
_low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_logging_level)
_low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
_low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe)
# The tasks extension's `taskIds` filter on subscriptions/listen (the SDK's handler drops it).
_low.add_request_handler(
    "subscriptions/listen",
    task_extension.ListenParams,
    task_extension.TaskListenHandler(_low._request_handlers["subscriptions/listen"].handler, app._subscriptions),
)


# --------------------------------------------------------------------------------------
# SSE resumability: an in-memory EventStore, scoped per session
# --------------------------------------------------------------------------------------


class InMemoryEventStore(EventStore):
    """Keeps the last `max_events` SSE events of one session for Last-Event-ID replay.

    Stream ids are JSON-RPC request ids, which every client reuses, so each session
    gets its own store (see `_SessionScopedManager`); otherwise a resuming client
    could be replayed another session's events for the same request id.
    """

    def __init__(self, max_events: int = 1000) -> None:
        self._events: OrderedDict[EventId, tuple[StreamId, types.JSONRPCMessage | None]] = OrderedDict()
        self._max = max_events

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        event_id = uuid.uuid4().hex
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._max:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        seen = False
        for event_id, (sid, message) in list(self._events.items()):
            if event_id == last_event_id:
                seen = True
                continue
            if seen and sid == stream_id and message is not None:  # skip priming rows
                await send_callback(EventMessage(message, event_id))
        return stream_id


class _SessionScopedManager(StreamableHTTPSessionManager):
    """StreamableHTTPSessionManager that gives every session its own InMemoryEventStore."""

    def _admit_session(self, requestor: Any) -> Any:
        transport = super()._admit_session(requestor)
        if transport is not None and self.event_store is not None:
            transport._event_store = InMemoryEventStore()
        return transport


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def _security_settings() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"],
        allowed_origins=["http://127.0.0.1", "http://127.0.0.1:*", "http://localhost", "http://localhost:*",
                         "http://[::1]", "http://[::1]:*"],
    )


def build_http_app(
    *,
    json_response: bool = False,
    event_store: bool = True,
    retry_ms: int | None = 500,
    session_idle_timeout: float | None = 600,
) -> Any:
    """The Starlette app serving Streamable HTTP at /mcp (both protocol eras)."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = _SessionScopedManager(
        app=_low,
        event_store=InMemoryEventStore() if event_store else None,  # marker; replaced per session
        json_response=json_response,
        security_settings=_security_settings(),
        retry_interval=retry_ms,
        session_idle_timeout=session_idle_timeout,
    )
    _low._session_manager = manager  # so app.session_manager works, as with streamable_http_app()
    return Starlette(
        routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda _app: manager.run(),
    )


async def serve_http(port: int, **app_options: Any) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    real_port = sock.getsockname()[1]
    config = uvicorn.Config(build_http_app(**app_options), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async with anyio.create_task_group() as tg:

        async def run() -> None:
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()

        tg.start_soon(run)
        while not server.started:
            await anyio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{real_port}/mcp", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="MCP conformance fixture server (mcp 2.3.0)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="serve MCP over stdin/stdout")
    mode.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer POSTs with JSON instead of SSE")
    parser.add_argument("--no-event-store", action="store_true", help="disable SSE resumability (Last-Event-ID)")
    parser.add_argument("--retry-ms", type=int, default=500, help="SSE retry: hint in ms (default 500)")
    parser.add_argument("--session-idle-timeout", type=float, default=600, help="seconds (default 600)")
    parser.add_argument("--log-level", default="WARNING", help="Python logging level on stderr")
    args = parser.parse_args(argv)

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(args.log_level.upper())  # MCPServer() configured its own handler at INFO

    if args.stdio:
        anyio.run(app.run_stdio_async)
    else:
        anyio.run(
            lambda: serve_http(
                args.http,
                json_response=args.json_response,
                event_store=not args.no_event_store,
                retry_ms=args.retry_ms,
                session_idle_timeout=args.session_idle_timeout,
            )
        )


if __name__ == "__main__":
    main()
