"""Every Compose key, and what an import does with it: mapped (by the module named), or
reported with what to do instead. A key in neither table is reported as unknown to Compose.

The service keys follow the Compose Specification's service element; ``x-`` keys are
extensions Compose itself ignores (they hold anchors), and so does an import.
"""

from __future__ import annotations

TOP_MAPPED = ("name", "services", "volumes")  # composing
TOP_IGNORED = ("version",)  # obsolete: Compose ignores it too
TOP_REPORTED = {
    "networks": "services of an environment reach each other by name; remove networks",
    "secrets": "set each secret with nebula secret set and reference it as ${{ secret.NAME }}",
    "configs": "bake the files into the image, or pass the values as variables",
    "include": "import each included file on its own and merge the results",
    "models": "run the model as a service of its own",
}

SERVICE_MAPPED = (
    # services: what the unit is, its volumes and variables; processes and resources: the rest
    "image", "build", "environment", "env_file", "depends_on", "volumes", "ports", "expose",
    "healthcheck", "command", "entrypoint", "deploy", "scale", "cpus", "mem_limit",
    "mem_reservation", "stop_grace_period", "restart", "hostname", "container_name", "networks",
)  # fmt: skip
_BAKE = "bake it into the image"
_RESTRICTED = "Nebula's pods run without it (pod_security); remove it"
SERVICE_REPORTED = {
    "annotations": "use [services.X.kubernetes] annotations",
    "attach": "remove it (read logs with kubectl logs)",
    "blkio_config": "remove it",
    "cap_add": _RESTRICTED,
    "cap_drop": "Nebula's pods drop capabilities already; remove it",
    "cgroup": "remove it",
    "cgroup_parent": "remove it",
    "configs": "bake the files into the image, or pass the values as variables",
    "cpu_count": "set cpu on the process",
    "cpu_percent": "set cpu on the process",
    "cpu_period": "set cpu on the process",
    "cpu_quota": "set cpu on the process",
    "cpu_rt_period": "set cpu on the process",
    "cpu_rt_runtime": "set cpu on the process",
    "cpu_shares": "set cpu on the process",
    "cpuset": "set cpu on the process",
    "credential_spec": "remove it",
    "develop": "remove it (Compose's watch mode is for development)",
    "device_cgroup_rules": _RESTRICTED,
    "devices": _RESTRICTED,
    "dns": "the cluster's DNS serves every pod; remove it",
    "dns_opt": "the cluster's DNS serves every pod; remove it",
    "dns_search": "the cluster's DNS serves every pod; remove it",
    "domainname": "remove it",
    "driver_opts": "remove it",
    "extends": "write the extended service's keys into this one and import again",
    "external_links": "reach services outside the project by an address in a variable",
    "extra_hosts": "use real DNS names in the variables",
    "gpus": "remove it (Nebula schedules no GPUs)",
    "group_add": _BAKE,
    "init": "remove it, or bake an init (tini) into the image",
    "ipc": _RESTRICTED,
    "isolation": "remove it",
    "label_file": "use [services.X.kubernetes] labels",
    "labels": "use [services.X.kubernetes] labels or annotations (routing labels: domains)",
    "links": "services reach each other by name (or ${{ host(svc) }}); remove links",
    "logging": "remove it (the cluster collects logs)",
    "mac_address": "remove it",
    "mem_swappiness": "remove it",
    "memswap_limit": "set memory on the process",
    "models": "run the model as a service of its own",
    "network_mode": "services of an environment reach each other by name; remove it",
    "oom_kill_disable": "remove it",
    "oom_score_adj": "remove it",
    "pid": _RESTRICTED,
    "pids_limit": "remove it",
    "platform": "build the image for the cluster's nodes (node_selector kubernetes.io/arch)",
    "post_start": "run it in the image's entrypoint",
    "pre_stop": "run it in the image's stop signal handler",
    "privileged": _RESTRICTED,
    "profiles": "the service is imported always; remove it from nebula.toml if not wanted",
    "provider": "run the provider's service outside Nebula and pass its address as a variable",
    "pull_policy": "Nebula deploys the image a release names; remove it",
    "read_only": "remove it",
    "runtime": "remove it",
    "secrets": "set each secret with nebula secret set and reference it as ${{ secret.NAME }}",
    "security_opt": _RESTRICTED,
    "shm_size": "remove it",
    "stdin_open": "remove it",
    "stop_signal": "make the process stop on SIGTERM",
    "storage_opt": "remove it",
    "sysctls": _RESTRICTED,
    "tmpfs": "write temporary files inside the container, or use a volume",
    "tty": "remove it",
    "ulimits": "remove it",
    "use_api_socket": "remove it",
    "user": "set USER in the image",
    "userns_mode": "remove it",
    "uts": "remove it",
    "volumes_from": "give each service its own volume",
    "working_dir": "set WORKDIR in the image",
}
