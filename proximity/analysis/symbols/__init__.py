"""The symbol channel's analysis: what one side changed definition by definition (``writes``),
what the other side's new code refers to (``reads``), per language (``pylang`` with Python's
``ast``; ``tslang`` and ``tsimports`` with tree-sitter for JS/TS, Go and Rust), and whether a
changed definition still serves the uses that reach it (``hazard``; whether a call still
binds, per language: ``binding``)."""
