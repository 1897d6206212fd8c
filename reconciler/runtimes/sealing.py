"""A Secret's values as the simulated cluster stores them: encrypted with the server's key (the
``vault``), like every other secret in the state database. Only ``data`` and ``stringData``
are sealed; what is not secret (its name, labels) stays readable."""

from __future__ import annotations

import json
from typing import Any

from reconciler.store.crypto import Vault

Manifest = dict[str, Any]
SEALED = "nebula.dev/sealed"  # the key that holds a Secret's data and stringData, encrypted
_FIELDS = ("data", "stringData")


def seal(vault: Vault, body: Manifest) -> Manifest:
    """A Secret as it is stored (other objects as they are)."""
    hidden = {k: body[k] for k in _FIELDS if k in body}
    if body.get("kind") != "Secret" or not hidden:
        return body
    rest = {k: v for k, v in body.items() if k not in hidden}
    return {**rest, SEALED: vault.encrypt(json.dumps(hidden)).decode("ascii")}


def unseal(vault: Vault, body: Manifest) -> Manifest:
    """An object as it was applied."""
    if SEALED not in body:
        return dict(body)
    hidden = json.loads(vault.decrypt(str(body[SEALED]).encode("ascii")))
    return {**{k: v for k, v in body.items() if k != SEALED}, **hidden}
