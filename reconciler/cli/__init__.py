"""The ``nebula`` command. Each module registers its subcommands; ``main`` dispatches."""
