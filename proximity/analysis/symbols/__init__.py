"""The symbol channel's analysis: what one side changed definition by definition (``writes``),
what the other side's new code refers to (``reads``), each file read by its language
(``analysis/languages``), and whether a changed definition still serves the uses that
reach it (``hazard``; whether a call still binds: ``binding``, by the language's rules).
The readers the languages share live here too: ``tslang`` and ``tsimports`` over any
tree-sitter grammar, ``calls`` and ``common``; so do the helpers only one language uses
(``pylang``, ``pycalls``, ``jslang``)."""
