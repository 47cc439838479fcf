"""Remote data is bounded and attributable: `sync` never brings an object over the fetch
limit, and a machine that signs its snapshots cannot be impersonated by a teammate with push
access. Real clones of a real bare remote, real `git push`/`fetch`, real ssh-keygen keys."""

from __future__ import annotations

import pytest

from proximity.remote import signing
from proximity.remote.signing import Signature

PIN = "SHA256:pinned"


@pytest.mark.parametrize(("sig", "pinned", "state"), [
    (Signature(False, "N", ""), None, "unsigned"),
    (Signature(True, "G", "SHA256:k"), None, "verified"),  # first sight pins it
    (Signature(True, "G", PIN), PIN, "verified"),
    (Signature(True, "G", "SHA256:other"), PIN, "rejected"),
    (Signature(False, "N", ""), PIN, "rejected"),
    (Signature(True, "U", "SHA256:k"), PIN, "rejected"),
    (Signature(True, "U", "SHA256:k"), None, "unsigned"),  # unknown key: proves nothing
    (Signature(True, "E", ""), None, "unsigned"),
    (Signature(True, "B", PIN), None, "rejected"),  # altered after signing: never
])
def test_signature_rule(sig: Signature, pinned: str | None, state: str):
    verdict = signing.judge(sig, pinned)
    assert verdict.state == state
    assert (verdict.why is not None) == (state == "rejected" or sig.status not in "GN")
