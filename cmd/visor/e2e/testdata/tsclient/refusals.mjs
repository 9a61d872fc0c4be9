// A client built on the official MCP TypeScript SDK that makes the calls
// it is given and prints what the SDK hands its caller for each, as one
// JSON line: {"<label>": {"result": ...} or {"error": {"code", "message"}},
// plus "toolsAfter": the length of a tools/list on the same session right
// after, which shows the session survived}. Arguments: the MCP URL and a
// JSON array of {"label", "token", "tool", "args"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const out = {};
for (const { label, token, tool, args } of JSON.parse(process.argv[3])) {
  const client = new Client({ name: "visor-e2e-ts-refusals", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  try {
    out[label] = { result: await client.callTool({ name: tool, arguments: args }) };
  } catch (e) {
    out[label] = { error: { code: e.code, message: e.message } };
  }
  out[label].toolsAfter = (await client.listTools()).tools.length;
  await client.close();
}
console.log(JSON.stringify(out));
