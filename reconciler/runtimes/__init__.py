"""Cluster runtimes behind one interface: ``simulated`` (embedded default) and ``kubernetes``."""
