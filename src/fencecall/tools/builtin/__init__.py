"""The tools fencecall ships; every ToolSpec defined in a module here is discovered."""
