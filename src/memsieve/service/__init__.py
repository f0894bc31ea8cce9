"""memsieve as a service: the REST app, the MCP server, and the core both call."""
