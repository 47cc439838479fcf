"""Git hooks as they reach proximity: what a stage carries (``inputs``), the host that runs it
(``hosts``, and its stash in ``stash``), the refs a push really pushes (``pushargs``), and
who ran the hook (``procs``). Imported by the thin hook path: standard library only."""
