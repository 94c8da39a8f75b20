/**
 * What each server's entry decides for itself. Exposure and tool filters: `"exposure"` gives
 * its tools theirs, `"includeTools"` / `"excludeTools"` choose among them, `"enabled": false`
 * leaves the server out. Roots: by default a server is offered the workspace; `"roots": false` offers none
 * (a server such as server-filesystem then keeps the folders of its own arguments), and a list
 * offers those folders instead. `/mcp` (`describe`) says what each was offered. Against the real
 * server-everything, whose `get-roots-list` tool exists only for a client that offers roots.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, expect, it } from "vitest";
import { parseMcpConfig } from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { serverEntry } from "./support/mcp.js";

const opened: McpServers[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
});

it('"roots": false offers none, a list offers those folders, and no "roots" offers the workspace; /mcp says which', async () => {
  const file = path.join("/home/u", "project", ".pi-course", "mcp.json");
  const everything = { command: process.execPath, args: [serverEntry("server-everything"), "stdio"] };
  const configs = parseMcpConfig(
    JSON.stringify({
      mcpServers: {
        plain: everything,
        none: { ...everything, roots: false },
        listed: { ...everything, roots: ["../data", "/srv/shared"] },
        wrong: { ...everything, roots: "all" },
      },
    }),
    file,
    {},
  );
  expect(configs.map((config) => [config.name, config.roots, config.problem])).toEqual([
    ["plain", undefined, undefined],
    ["none", false, undefined],
    ["listed", ["/home/u/project/data", "/srv/shared"], undefined],
    ["wrong", undefined, `server "wrong" in ${file}: "roots" must be false (offer none) or a list of folders`],
  ]);
  const servers = McpServers.start(configs, { root: "/work/space", startupTimeoutMs: 20_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  const lines = servers.describe().split("\n");
  for (const expected of [
    "  roots: /work/space",
    '  roots: none ("roots": false)',
    "  roots: /home/u/project/data, /srv/shared",
  ])
    expect(lines).toContain(expected);

  const rootsOf = async (server: string) => {
    const tool = servers.tools.find((candidate) => candidate.name === `mcp__${server}__get-roots-list`);
    if (tool === undefined) return "no get-roots-list tool";
    const result = await tool.execute("call", {}, undefined);
    return result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  };
  expect(await rootsOf("plain")).toContain(pathToFileURL("/work/space").href);
  expect(await rootsOf("none")).toBe("no get-roots-list tool");
  const listed = await rootsOf("listed");
  expect(listed).toContain(pathToFileURL("/home/u/project/data").href);
  expect(listed).toContain(pathToFileURL("/srv/shared").href);
  expect(listed).not.toContain("/work/space");
}, 60_000);

it('"exposure", "includeTools" and "excludeTools" shape a server\'s tools; "enabled": false leaves it out', async () => {
  const everything = { command: process.execPath, args: [serverEntry("server-everything"), "stdio"] };
  const file = "/home/u/.pi-course/mcp.json";
  const configs = parseMcpConfig(
    JSON.stringify({
      mcpServers: {
        found: { ...everything, exposure: "search", includeTools: ["echo", "get-sum"] },
        scripted: { ...everything, exposure: "codemode", excludeTools: ["echo"] },
        off: { ...everything, enabled: false },
        odd: { ...everything, exposure: "sometimes" },
      },
    }),
    file,
    {},
  );
  expect(configs.map((config) => [config.name, config.exposure, config.problem])).toEqual([
    ["found", "search", undefined],
    ["scripted", "codemode", undefined],
    ["odd", undefined, `server "odd" in ${file}: "exposure" must be "direct", "search" or "codemode", got "sometimes"`],
  ]);
  const servers = McpServers.start(configs, { startupTimeoutMs: 20_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  const of = (server: string) => servers.tools.filter((tool) => tool.name.startsWith(`mcp__${server}__`));
  expect(of("found").map((tool) => [tool.name, tool.exposure])).toEqual([
    ["mcp__found__echo", "deferred"],
    ["mcp__found__get-sum", "deferred"],
  ]);
  const scripted = of("scripted");
  expect(scripted.length).toBeGreaterThan(5);
  expect(scripted.every((tool) => tool.exposure === "codemode")).toBe(true);
  expect(scripted.map((tool) => tool.name)).not.toContain("mcp__scripted__echo");
}, 60_000);
