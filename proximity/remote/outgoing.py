"""What `sync` may publish: a teammate needs our changes, never our secrets.

Pure decisions over (path, size, tracked) facts; sharing.py applies them to a tree with a
temporary index. A path HEAD does not have (untracked or newly added) is withheld when it
looks like a secret; any path is withheld when it matches ``sync_exclude`` or is larger than
``sync_max_bytes``. A withheld path that HEAD has is published as HEAD has it (its committed
version leaves anyway with HEAD, the snapshot's parent), so a teammate sees no change there;
one HEAD does not have is left out of the published tree. Tracked files that look like
secrets are published with their live content: they are shared through git already.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

# matched against the file name (any directory) and, for patterns with a "/", the path
SECRET_PATTERNS: tuple[str, ...] = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.asc", "*.gpg", "*.kdbx", "*.ovpn", "*.ppk", "id_*", "*_rsa", "*_dsa",
    "*_ecdsa", "*_ed25519", "credentials*", "*credential*", "*secret*", "*password*",
    "*token*", ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
    ".dockercfg", "*.tfstate", "*.tfstate.*", "*.tfvars", "service-account*.json",
    ".ssh/*", ".aws/*", ".gnupg/*", ".docker/config.json", ".kube/config",
)


def looks_secret(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    low = path.lower()
    for pat in SECRET_PATTERNS:
        if "/" in pat:
            if fnmatch.fnmatchcase(low, pat) or fnmatch.fnmatchcase(low, "*/" + pat):
                return True
        elif fnmatch.fnmatchcase(name, pat):
            return True
    return False


def reason(path: str, size: int, tracked: bool, exclude: Iterable[str], max_bytes: int
           ) -> str | None:
    """Why ``path`` must not leave the machine, or None when it may (``tracked``: HEAD has
    the path)."""
    if not tracked and looks_secret(path):
        return "secret"
    if any(fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path.rsplit("/", 1)[-1], pat)
           for pat in exclude):
        return "excluded"
    if size > max_bytes:
        return "too large"
    return None
