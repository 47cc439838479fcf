"""The demo's shop: a tiny repository's files, shared by `proximity demo` and its swarm."""

from __future__ import annotations

import os

MODELS = '''\
"""Data models."""


class User:
    def __init__(self, name, email):
        self.name = name
        self.email = email

    def save(self, db):
        db.put(self.name, self.email)
        return True


def find_user(db, name):
    return db.get(name)
'''
VIEWS = '''\
"""HTTP views."""
from app.models import find_user


def show(db, name):
    user = find_user(db, name)
    return f"<h1>{user.name}</h1>"
'''
UTIL = '''\
"""Helpers nobody else touches."""


def slugify(text):
    return text.lower().replace(" ", "-")
'''
README = "# shop\n\nA tiny shop.\n"


def write(root: str, rel: str, text: str) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path) or root, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
