"""``fencecall acp``: fencecall as an Agent Client Protocol agent, driven by an editor.

The editor (Zed, say) starts ``fencecall acp`` and speaks JSON-RPC over its stdin and
stdout. Each ACP session is a fencecall conversation on disk, built by the one assembler
(:mod:`fencecall.assembly`) as the chat builds its own. The model's text, its thinking and
its calls stream back as session updates (:mod:`._updates`); every call the terminal would
confirm is asked of the editor with the terminal's own text (:mod:`._permissions`); a cancel
stops the model and the running tool as Ctrl-C does (:mod:`._sessions`). It sits above the
command line, whose confirmation text, slash commands and flags it reuses.
"""
