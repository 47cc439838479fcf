"""Git hooks as they reach proximity: what a stage carries (``inputs``), the host that runs it
(``hosts``, and its stash in ``stash``), the refs a push really pushes (``pushargs``), and
who ran the hook (``procs``) -- the thin hook path imports these, so they use the standard
library only -- and one stage run (``stages``: record, retention and inbox; judge, print
and block), shared by the in-process hook and the resident service, with what the commit
and push gates judge (``gate``)."""
