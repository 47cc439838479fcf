"""Agents ask before they edit: the pre-edit check's facts (``precheck``) and its decision
(``decision``), the check as the service answers it (``checkops``), the harness adapters
(``harness``: Claude Code, Gemini CLI) and the MCP server (``mcp_server``)."""
