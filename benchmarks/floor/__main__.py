"""The engine's floor: N plain ConfigMaps through one explicit Kubernetes provider configured as
the program's own (server-side apply, mutable ConfigMaps), with no parent, alias or dependency.

benchmarks/engine.py runs it with the same engine, language host and provider as the program,
at the program's resource count: the program's converged `up` against this one's is goal 2.
"""

import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config("floor")
count = config.require_int("count")
namespace = config.get("namespace") or "floor"
provider = k8s.Provider(
    "kubernetes", kubeconfig=config.require("kubeconfig"), enable_server_side_apply=True, enable_config_map_mutable=True
)
options = pulumi.ResourceOptions(provider=provider)
for index in range(count):
    name = f"floor-{index:05d}"
    k8s.core.v1.ConfigMap(
        name, metadata={"name": name, "namespace": namespace}, data={"index": str(index)}, opts=options
    )
