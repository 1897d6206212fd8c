"""Single sign-on's edge: the OpenID Connect provider, spoken to over HTTP (httpx), and the ID
tokens it issues, verified with PyJWT. Nothing here knows members or sessions (``admin``)."""
