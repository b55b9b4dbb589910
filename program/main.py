"""The Pulumi program: settings -> observe -> plan -> declare."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from components.appliance import Appliance, ApplianceArgs
from components.dynamic import DynamicProviders
from planning.catalog_overrides import CatalogsInForce, catalogs_in_force
from planning.plan import Plan, plan
from planning.settings import APPLIANCE_NAME
from program.observe import observe
from program.problems import warn_on_problems
from program.report import log_run
from program.settings import Settings
from providers.direct_runtime import DirectRuntimeProvider
from providers.gpu_validation import GpuValidationHistoryProvider, GpuValidationProvider
from providers.offloading_store import OffloadingProfileProvider
from providers.ollama import OllamaAliasProvider
from providers.pod_recovery import PodRecoveryProvider
from providers.profile_store import RuntimeProfileProvider
from providers.stale_removal import StaleRemovalProvider
from providers.status_batch import StatusBatchProvider


def kubernetes_provider(settings: Settings) -> k8s.Provider:
    """The one provider of the run: server-side apply, adopt existing objects, mutable ConfigMaps.

    Objects that already exist (an earlier operator's, a lost state's) are adopted: the pinned
    provider (pulumi-kubernetes 4.25) creates by server-side apply, which takes an existing
    object over instead of failing with AlreadyExists. Later releases create client-side and
    adopt only with `upsert_existing_objects=True`: set it when the pin moves past 4.25
    (tests/e2e prove the adoption on the real provider).

    Without a kubeconfig the provider falls back to the ambient one: KUBECONFIG, ~/.kube/config,
    or the in-cluster service account when the program runs under the Pulumi Kubernetes Operator.
    Kubeconfig contents (not a path) hold credentials and enter the state only as a secret.
    """
    kubeconfig = settings.kubeconfig
    contents = kubeconfig is not None and "\n" in kubeconfig
    return k8s.Provider(
        "kubernetes",
        kubeconfig=pulumi.Output.secret(kubeconfig) if kubeconfig is not None and contents else kubeconfig,
        context=settings.context,
        enable_server_side_apply=True,
        enable_config_map_mutable=True,
    )


def warn_on_catalogs(in_force: CatalogsInForce, desired: Plan) -> None:
    """One warning per catalog ConfigMap that is not applied, when no Appliance/local status says
    so (log_run already warns about a Degraded Appliance with its message)."""
    if any(update.kind == "Appliance" for update in desired.statuses):
        return
    for problem in in_force.problems:
        pulumi.log.warn(f"CatalogInvalid: {problem.describe()}")


def run() -> Plan:
    settings = Settings.from_config()
    snapshot = observe(settings)
    # Precedence per catalog: its ConfigMap in the system namespace, else magicstick:catalogDir's
    # file, else the shipped file (planning.catalog_overrides).
    in_force = catalogs_in_force(
        snapshot, load_catalogs(settings.catalog_dir), system_namespace=settings.plan.system_namespace
    )
    desired = plan(
        snapshot=snapshot,
        catalogs=in_force.catalogs,
        catalog_problems=in_force.problems,
        now=settings.now,
        settings=settings.plan,
        own_crds=load_committed_crds(),
    )
    provider = kubernetes_provider(settings)
    appliance = Appliance(
        APPLIANCE_NAME,
        ApplianceArgs(
            plan=desired,
            # No access is handed to them: the engine passes the provider process the stack
            # config, and `configure` reads the same magicstick:kubeconfig/context as `settings`.
            providers=DynamicProviders(
                status=StatusBatchProvider(),
                runtime_profile=RuntimeProfileProvider(),
                pod_recovery=PodRecoveryProvider(),
                ollama_alias=OllamaAliasProvider(),
                stale_removal=StaleRemovalProvider(),
                offloading_profile=OffloadingProfileProvider(),
                direct_runtime=DirectRuntimeProvider(),
                gpu_validation=GpuValidationProvider(),
                gpu_validation_history=GpuValidationHistoryProvider(),
            ),
        ),
        opts=pulumi.ResourceOptions(providers=[provider]),
    )
    log_run(desired)
    warn_on_catalogs(in_force, desired)
    warn_on_problems(appliance.operations)
    pulumi.export("phase", next((s.status["phase"] for s in desired.statuses if s.kind == "Appliance"), None))
    return desired
