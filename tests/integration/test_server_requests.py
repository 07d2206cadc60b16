"""server-everything asks the client for an LLM sample in the middle of a tool call.

Through sluice, a legacy client answers the relayed `sampling/createMessage` directly; a
2026-07-28 client gets it as an MRTR `input_required` round (sluice keeps the upstream call open
and hands the client a sealed `requestState`), which the Python SDK answers and retries on its
own. Either way the client's sample must reach the upstream and come back in the tool's result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CreateMessageResult, ElicitResult, TextContent

import harness as H
from conftest import write_config

SAMPLE = "a sample written by the test client"


async def _sampling(context: Any, params: Any) -> CreateMessageResult:
    prompt = params.messages[0].content.text
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text=f"{SAMPLE} (asked: {prompt})"),
        model="test-model", stop_reason="endTurn",
    )


async def _call(url: str, mode: str) -> tuple[str, str]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + 2 * H.OP_TIMEOUT):
        async with Client(url, mode=mode, cache=None, read_timeout_seconds=H.OP_TIMEOUT,
                          sampling_callback=_sampling) as client:
            result = await client.call_tool("everything__trigger-sampling-request",
                                            {"prompt": "bridge?", "maxTokens": 20})
            return client.protocol_version, "\n".join(c.text for c in result.content if hasattr(c, "text"))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sampling_reaches_the_client_in_both_eras(tmp_path: Path, sluice_servers: Any, mode: str) -> None:
    ws = H.Workspace(tmp_path / "ws")
    ups = {n: u for n, u in ws.upstreams().items() if n == "everything"}
    cfg = write_config(tmp_path / "sluice.toml", ups)
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(ups))
    version, text = anyio.run(_call, srv.url, mode)
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert SAMPLE in text and "bridge?" in text, text


# server-everything lists `trigger-url-elicitation` only to a client that declared URL-mode
# elicitation, which sluice does upstream; the tool sends `elicitation/create` with `mode: "url"`.
# A legacy client answers it directly, a 2026-07-28 client in an MRTR round. sluice's guard on the
# URL (https only, except loopback) refuses a plain-http page before any client sees it.
URL_TOOL = "everything__trigger-url-elicitation"
CONSENT_URL = "https://auth.example.com/consent?flow=test"


async def _url_call(url: str, mode: str, page: str) -> tuple[str, list[dict[str, Any]], str, bool]:
    asked: list[dict[str, Any]] = []

    async def elicitation(context: Any, params: Any) -> ElicitResult:
        asked.append(params.model_dump(by_alias=True, exclude_none=True))
        return ElicitResult(action="accept")

    with anyio.fail_after(H.CONNECT_TIMEOUT + 3 * H.OP_TIMEOUT):
        async with Client(url, mode=mode, cache=None, read_timeout_seconds=H.OP_TIMEOUT,
                          elicitation_callback=elicitation) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert URL_TOOL in tools, sorted(tools)
            result = await client.call_tool(URL_TOOL, {"url": page, "message": "Approve the test"})
            text = "\n".join(c.text for c in result.content if hasattr(c, "text"))
            return client.protocol_version, asked, text, bool(result.is_error)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_url_elicitation_reaches_the_client_in_both_eras(tmp_path: Path, sluice_servers: Any, mode: str) -> None:
    ws = H.Workspace(tmp_path / "ws")
    ups = {n: u for n, u in ws.upstreams().items() if n == "everything"}
    cfg = write_config(tmp_path / "sluice.toml", ups)
    srv = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", set(ups))

    version, asked, text, is_error = anyio.run(_url_call, srv.url, mode, CONSENT_URL)
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert len(asked) == 1, asked
    assert asked[0]["mode"] == "url" and asked[0]["url"] == CONSENT_URL, asked
    assert asked[0]["message"] == "Approve the test", asked
    assert not is_error and "User completed the URL elicitation flow" in text and CONSENT_URL in text, text

    # Plain http to a public host: refused by sluice, answered to the upstream as an error; the
    # client is never asked and the tool reports the failure.
    page = "http://pay.example.com/checkout?order=42"
    _, asked, text, is_error = anyio.run(_url_call, srv.url, mode, page)
    assert asked == [], asked
    assert is_error, text
    assert "sluice refused a URL-mode elicitation" in text and "not https" in text, text
    assert "order=42" not in text.split("sluice refused", 1)[1], text
