"""Beyond one machine: sharing snapshots through the git remote (``sharing``), what may leave
the machine (``outgoing``), others' snapshots read back as agents (``inbound``), and the limits
and safe text for data from other people (``untrusted``)."""
