"""Kubernetes manifests for Nebula's releases, rendered from frozen inputs.

The pieces, in the order data flows through them::

    releases      the inputs: ReleaseSpec, DatabaseUnit, EnvironmentUnit (frozen, hashable)
    variables     a release's variables as ConfigMap literals and secretKeyRef env entries
    pods, objects which objects a release/service/environment/database consists of (drafts)
    templating    the Jinja2 environment: StrictUndefined, and nothing is output unquoted
    quoting       values as one-line YAML scalars that cannot change a manifest's structure
    manifests     render + parse (libyaml's C loader) each object; Manifest, to_yaml
    rendering     Renderer: the entry point, cached by content (caching)
    schemas       validation against the Kubernetes schemas of the cluster's version
    capabilities  which API versions the cluster serves (CronJob batch/v1 or v1beta1)
    secrets       where Secret values come from: the server, or marked placeholders
"""
