"""Server-side secrets per project and environment, encrypted at rest; never printed back."""

from __future__ import annotations

import re

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.states import SecretChange
from reconciler.errors import ConfigurationError, NotFoundError
from reconciler.store import schema
from reconciler.store.crypto import Vault

# Decrypted values per (project id, environment), as a batch of deployments reads them.
Secrets = dict[tuple[int, str], dict[str, str]]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Reserved names under which Nebula keeps its own generated values (database passwords).
DATABASE_PASSWORD = "nebula.database-password.{name}"


def put(
    session: Session,
    clock: Clock,
    vault: Vault,
    project_id: int,
    environment: str,
    name: str,
    value: str,
) -> SecretChange:
    """Store ``value`` (encrypted); says whether it was missing, new or the same as before."""
    if not (_NAME.match(name) or name.startswith("nebula.")):
        raise ConfigurationError(
            f"'{name}' is not a valid secret name",
            hint="use letters, digits and '_' (e.g. STRIPE_KEY)",
        )
    row = session.scalars(
        select(schema.Secret).where(
            schema.Secret.project_id == project_id,
            schema.Secret.environment == environment,
            schema.Secret.name == name,
        )
    ).first()
    if row is None:
        session.add(
            schema.Secret(
                project_id=project_id,
                environment=environment,
                name=name,
                ciphertext=vault.encrypt(value),
                updated_at=clock.now(),
            )
        )
        return SecretChange.ADDED
    if vault.decrypt(row.ciphertext) == value:
        return SecretChange.UNCHANGED
    row.ciphertext = vault.encrypt(value)
    row.updated_at = clock.now()
    return SecretChange.CHANGED


def delete(session: Session, project_id: int, environment: str, name: str) -> None:
    row = session.scalars(
        select(schema.Secret).where(
            schema.Secret.project_id == project_id,
            schema.Secret.environment == environment,
            schema.Secret.name == name,
        )
    ).first()
    if row is None or name.startswith("nebula."):
        raise NotFoundError(
            f"No secret {name} in {environment}",
            hint="list them with: nebula secret list SLUG ENV",
        )
    session.delete(row)


def names(session: Session, project_id: int, environment: str) -> set[str]:
    rows = session.scalars(
        select(schema.Secret.name).where(
            schema.Secret.project_id == project_id, schema.Secret.environment == environment
        )
    )
    return {n for n in rows if not n.startswith("nebula.")}


def values(session: Session, vault: Vault, project_id: int, environment: str) -> dict[str, str]:
    """Decrypted values, for applying to the cluster only; never for display."""
    rows = session.scalars(
        select(schema.Secret).where(
            schema.Secret.project_id == project_id, schema.Secret.environment == environment
        )
    )
    return {r.name: vault.decrypt(r.ciphertext) for r in rows}


def values_in(session: Session, vault: Vault, environments: set[tuple[int, str]]) -> Secrets:
    """``values`` of several environments (project id, name) in one query, each decrypted once."""
    found: Secrets = {where: {} for where in environments}
    if not environments:
        return found
    rows = session.scalars(
        select(schema.Secret).where(
            tuple_(schema.Secret.project_id, schema.Secret.environment).in_(list(environments))
        )
    )
    for r in rows:
        found[(r.project_id, r.environment)][r.name] = vault.decrypt(r.ciphertext)
    return found
