"""The git edge: the only package that talks to git remotes (through pygit2/libgit2).

``cache.GitCache`` asks remotes for branch heads, fetches only commits it lacks, and reads
files as blobs; ``urls`` classifies and sanitizes remote URLs; ``credentials`` hands tokens
and keys to libgit2; ``failures`` turns libgit2's errors into ours. Everything it returns is
a plain value from ``results``. (Import the modules: the package imports nothing, so that
``urls`` does not bring pygit2 with it.)
"""
