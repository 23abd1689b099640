"""Developer tools that do not ship with Flowdesk (demos of single widgets)."""
