"""Repository URLs at rest: one with credentials in it is kept encrypted with the vault, and
only its sanitized form is stored in clear. ``seal_credentials`` runs at every start-up (a
store from before that rule is sealed once), so it stays light: no validator, no git."""

from __future__ import annotations

from sqlalchemy import select, text

from reconciler.errors import ConfigurationError
from reconciler.gitsource import urls
from reconciler.store import schema
from reconciler.store.crypto import Vault
from reconciler.store.database import Database


def store_repo(project: schema.Project, vault: Vault | None, repo: str) -> None:
    url = repo.strip()
    shown = urls.sanitize_url(url)
    if shown != url and vault is None:
        raise ConfigurationError("credentials in a repository URL need the vault to be stored")
    project.repo_url = shown
    project.repo_url_encrypted = vault.encrypt(url) if shown != url and vault else None


def seal_credentials(db: Database, vault: Vault) -> int:
    """Projects registered before URLs with credentials were stored encrypted: seal them;
    returns how many. On SQLite the freed bytes are zeroed (``secure_delete``) and the
    write-ahead log is truncated, so no copy of the old text stays in the files."""
    with db.reading() as session:
        query = select(schema.Project.id, schema.Project.repo_url).where(
            schema.Project.repo_url_encrypted.is_(None)
        )
        legacy = [
            r.id for r in session.execute(query) if urls.sanitize_url(r.repo_url) != r.repo_url
        ]
    if not legacy:
        return 0
    with db.transaction() as session:
        if db.is_sqlite:
            session.execute(text("PRAGMA secure_delete = ON"))
        for project in session.scalars(select(schema.Project).where(schema.Project.id.in_(legacy))):
            store_repo(project, vault, project.repo_url)
    if db.is_sqlite:  # outside any transaction, which a checkpoint cannot run in
        connection = db.engine.raw_connection()
        try:
            connection.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    return len(legacy)


def shown_repo(project: schema.Project) -> str:
    """The URL as every output shows it: ``https://***@host/x`` when it has credentials."""
    return urls.sanitize_url(project.repo_url)
