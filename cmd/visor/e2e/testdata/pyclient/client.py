# A client built on the official MCP Python SDK (Debian's python3-mcp) that
# connects with each credential it is given, lists the tools and makes the
# calls it is given, and prints one JSON object:
# {"<label>": {"server": name, "tools": [names], "calls": {"<tool>":
# {"isError": bool, "text": str, "structured": obj} or {"error": {"code",
# "message"}}}, "toolsAfter": n}}. Arguments: the MCP URL and a JSON array
# of {"label", "token", "calls": [{"tool", "args"}]}.
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.shared.exceptions import McpError


def connect(url, token):
    headers = {"Authorization": "Bearer " + token}
    try:
        import httpx
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers, timeout=30))
    except ImportError:
        from mcp.client.streamable_http import streamablehttp_client

        return streamablehttp_client(url, headers=headers)


async def run(url, label, token, calls):
    out = {"calls": {}}
    async with connect(url, token) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.serverInfo.name
            out["tools"] = [t.name for t in (await session.list_tools()).tools]
            for c in calls:
                try:
                    res = await session.call_tool(c["tool"], c.get("args") or {})
                    text = "".join(getattr(p, "text", "") for p in res.content)
                    out["calls"][c["tool"]] = {"isError": bool(res.isError), "text": text,
                                               "structured": res.structuredContent}
                except McpError as e:
                    out["calls"][c["tool"]] = {"error": {"code": e.error.code, "message": e.error.message}}
            out["toolsAfter"] = len((await session.list_tools()).tools)
    return out


async def main():
    url = sys.argv[1]
    result = {}
    for spec in json.loads(sys.argv[2]):
        result[spec["label"]] = await run(url, spec["label"], spec["token"], spec.get("calls") or [])
    print(json.dumps(result))


asyncio.run(main())
