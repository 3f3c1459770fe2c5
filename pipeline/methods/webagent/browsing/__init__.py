"""What the web agent (``pipeline.methods.webagent``) browses: one small interface (``Browser``: search, open)
with two implementations, the real web (DuckDuckGo and guarded page loading, ``realweb`` and ``fetch``) and a
local "web" over collections or an evaluation corpus (``local``), plus the page model both share (``pages``:
results, pages cut into windows of numbered sentences) and the agent's browsing state with its action masks
(``agent``)."""
