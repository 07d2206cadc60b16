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
from mcp_types import CreateMessageResult, TextContent

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
