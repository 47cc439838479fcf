"""Git hooks as they reach proximity: what a stage carries (``inputs``), the host that runs it
(``hosts``, and its stash in ``stash``), the refs a push really pushes (``pushargs``), and
who ran the hook (``procs``) -- the thin hook path imports these, so they use the standard
library only -- and the hook's verdict (``verdict``: judge, print, block), shared by the
in-process hook and the resident service."""
