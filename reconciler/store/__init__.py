"""The state store: SQLAlchemy 2 models (separate from the frozen domain objects), the
database engine and its Alembic migrations, and encryption of secrets at rest."""
