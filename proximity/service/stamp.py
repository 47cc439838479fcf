"""This code's identity, the code stamp every request carries: the package version, the
interpreter's, and a hash of its modules' content (not their modification times, so two
installs of one commit share one service). Standard library only: hooks import it.

The hash is kept per install, keyed by what tells that install's code changed: for a source
checkout (an editable install, a copy run from a directory) every module's listing, since
any file may be edited in place; for a copy an installer wrote into site-packages, the
package directory and its ``__init__.py``, which every installer writes anew (an upgrade,
a reinstall of other code), so each check pays two stats instead of one per module.
"""

from __future__ import annotations

import os
import sys

from proximity import __version__, layout, owned

_STAMP: list[str] = []


def code_stamp() -> str:
    """This code's identity: the package version and a hash of its modules' content. A
    service whose stamp differs runs other code (it was started before an upgrade, or an
    edit): its clients ask it to exit and judge in process. Content, not modification
    times: two installs of one commit (pre-commit's environment, a ``pip install``) share
    one service instead of stopping each other's on every call."""
    if not _STAMP:
        # the whole package, not this module's folder
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _STAMP.append(package_stamp(pkg, stamp_cache_dir()))
    return _STAMP[0]


def package_stamp(pkg: str, cache: str | None) -> str:
    """The stamp of the package in directory ``pkg``: its version, the interpreter's, and
    a hash of its modules' names and content. Reading every module costs a hook more than
    its request, so the content hash is kept in ``cache`` (one small file per install),
    keyed by :func:`installed_key` or, for a source checkout, the modules' listing (name,
    size, times, inode): a hook pays for two stats or the listing, and one small read; a
    change of the key reads the content again."""
    key = installed_key(pkg)
    files = module_files(pkg) if key is None else None
    if files is not None:
        import zlib

        listing = "\n".join([__version__, sys.version.split()[0], pkg] + [
            f"{name}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
            for name, st in files]).encode("utf-8", "surrogateescape")
        key = f"{zlib.crc32(listing):08x}{zlib.adler32(listing):08x}{len(files)}"
    note = os.path.join(cache, "stamp-" + _key(pkg)) if cache else None
    digest = _cached(note, key) if note and key else None
    if digest is None:
        names = [name for name, _ in (files if files is not None else module_files(pkg))]
        digest = content_hash(pkg, names)
        if note and key:
            _keep(note, key, digest)
    return f"{__version__}+{sys.version.split()[0]}+{digest}"


INSTALLED_DIRS = ("site-packages", "dist-packages")  # where installers put packages


def installed_key(pkg: str) -> str | None:
    """For a package an installer wrote (its directory under site-packages): the identity
    of that directory and of its ``__init__.py`` — inode, size and times, with the
    versions and the path — which any install, upgrade or reinstall changes (pip, uv and
    the others write each file anew). None: a source checkout (any module may be edited
    in place: the caller lists them all), or nothing to stat."""
    if os.path.basename(os.path.dirname(pkg)) not in INSTALLED_DIRS:
        return None
    try:
        d = os.stat(pkg)
        i = os.stat(os.path.join(pkg, "__init__.py"))
    except OSError:
        return None
    return (f"i{d.st_ino}:{d.st_mtime_ns}:{d.st_ctime_ns}:{i.st_ino}:{i.st_size}:"
            f"{i.st_mtime_ns}:{i.st_ctime_ns}:{__version__}:{sys.version.split()[0]}")


def module_files(pkg: str) -> list[tuple[str, os.stat_result]]:
    """Every module of the package, '/'-separated names in a fixed order, with its stat."""
    out: list[tuple[str, os.stat_result]] = []
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            entries = sorted(os.scandir(os.path.join(pkg, rel) if rel else pkg),
                             key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                if e.name.endswith(".py"):
                    out.append((name, e.stat()))
                elif e.name != "__pycache__" and e.is_dir():
                    todo.append(name)
            except OSError:
                continue
    return sorted(out, key=lambda x: x[0])


def content_hash(pkg: str, names: list[str]) -> str:
    """A hash of these modules' names and bytes (an unreadable one counts as empty)."""
    import hashlib

    h = hashlib.sha256()
    for name in names:
        try:
            with open(os.path.join(pkg, name), "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        h.update(b"%s\0%d\0" % (name.encode("utf-8", "surrogateescape"), len(data)))
        h.update(data)
    return h.hexdigest()[:24]


def stamp_cache_dir() -> str | None:
    """Where content hashes are kept: the private runtime directory (None: not ours)."""
    d = layout.runtime_dir()
    return d if owned.why_not_private(d) is None else None


def _key(pkg: str) -> str:
    """A file name for the install at ``pkg``: 64-bit FNV-1a of its path (no zlib to
    load for a name)."""
    h = 0xCBF29CE484222325
    for byte in pkg.encode("utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _cached(note: str, key: str) -> str | None:
    """The content hash kept for this listing, or None (no note, another listing)."""
    try:
        fd = os.open(note, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        text = os.read(fd, 512).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    got, _, digest = text.strip().partition(" ")
    ok = got == key and len(digest) == 24 and all(c in "0123456789abcdef" for c in digest)
    return digest if ok else None


def _keep(note: str, key: str, digest: str) -> None:
    """Keep the content hash for the next process (written whole, then renamed in)."""
    tmp = f"{note}.{os.getpid()}.tmp"
    try:
        owned.private_dir(os.path.dirname(note))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, f"{key} {digest}\n".encode())
        finally:
            os.close(fd)
        os.replace(tmp, note)
    except OSError:
        try:  # noqa: SIM105 -- (contextlib is one more import for every hook)
            os.unlink(tmp)
        except OSError:
            pass
