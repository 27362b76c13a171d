"""``diarist mcp``: the chat's memory tools for an MCP client (a desktop app, an editor) on
stdio. :mod:`workers.mcp.bridge` is the synchronous side (one connection as one session of
events, each call through :func:`workers.chat.tools.run_tool`); :mod:`workers.mcp.server`
is the MCP SDK's side (imported only by that command: the SDK takes a second to import)."""
