"""``nebula import compose``: a Compose file turned into a nebula.toml, with no I/O.

``yamltree`` reads the YAML keeping each key's line and column; ``services`` and
``processes`` map one Compose service, ``values`` its environment (connection strings to
references, secret-looking values to ``${{ secret.NAME }}``); ``composing`` puts the file
together and has Nebula's own validator judge the result. What has no equivalent is never
dropped silently: each becomes a ``notes.Note`` at its ``FILE:LINE:COL``.
"""
