"""Agents ask before they edit: the one answerer every front end asks (``answer``), the
check's facts (``precheck``) and decision (``decision``), what it prints (``output``),
merges (``merging``), edits and patches read from a harness's event (``edits``,
``patches``, ``shell``) and one adapter per agent harness (``harnesses``)."""
