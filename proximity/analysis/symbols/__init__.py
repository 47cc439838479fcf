"""The symbol channel's analysis: what one side changed definition by definition (``writes``),
what the other side's new code refers to (``reads``), each file read by its language
(``analysis/languages``: shared readers here, ``pylang`` for one language's standard
library parser, ``tslang`` and ``tsimports`` over any tree-sitter grammar), and whether a
changed definition still serves the uses that reach it (``hazard``; whether a call still
binds: ``binding``, by the language's rules, with the shared ones in ``calls``)."""
