"""Seeing the airspace: the JSON contract and text of scans and advisories (``report``), the
rich tables of ``status`` and ``watch`` (``tables``), and the 3-D coordinates of the view
(``embedding``)."""
