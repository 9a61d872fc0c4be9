// A client built on the official MCP TypeScript SDK, as an application
// would write it: it connects to the MCP URL given as its argument, follows
// the whole OAuth discovery (401, resource metadata, authorization server
// metadata, dynamic registration, PKCE) and prints one JSON line per event
// on stdout: {"authorize": URL} when a person must open URL in a browser,
// then {"result": ...} once connected. The test plays the person.
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const mcpURL = new URL(process.argv[2]);

// The redirect lands on a loopback listener, as native clients do.
let gotCode;
const code = new Promise((resolve) => { gotCode = resolve; });
const callback = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  if (u.pathname !== "/callback") { res.statusCode = 404; res.end(); return; }
  res.end("You can close this window.");
  gotCode(u.searchParams);
});
await new Promise((resolve) => callback.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

// In-memory storage; a real application would keep these.
const stored = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: "TypeScript SDK client", redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation() { return stored.client; },
  saveClientInformation(c) { stored.client = c; },
  tokens() { return stored.tokens; },
  saveTokens(t) { stored.tokens = t; },
  redirectToAuthorization(url) { console.log(JSON.stringify({ authorize: url.href })); },
  saveCodeVerifier(v) { stored.verifier = v; },
  codeVerifier() { return stored.verifier; },
};

const client = new Client({ name: "visor-e2e-ts", version: "1.0.0" });
try {
  await client.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider }));
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  const params = await code;
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  await transport.finishAuth(params.get("code"));
  await client.connect(transport);
}
const tools = await client.listTools();
const status = await client.callTool({ name: "agent_status", arguments: {} });
console.log(JSON.stringify({ result: {
  scope: stored.tokens.scope ?? "",
  tools: tools.tools.map((t) => t.name),
  agentStatus: status.content[0].text,
  server: client.getServerVersion(),
} }));
await client.close();
callback.close();
