"""The Model Context Protocol front end: `proximity mcp` serves check, check_merge, status,
intend and inbox to any MCP client over stdio (the official `mcp` SDK)."""
