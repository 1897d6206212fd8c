"""The nebula.toml model: parsing, validation, references and the dependency graph.

Purely data-manipulative and computational: no external calls or any I/O. Callers import
modules, not names: ``from reconciler.model import specs`` then ``specs.ServiceSpec``.
"""
