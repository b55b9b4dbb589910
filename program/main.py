"""The Pulumi program: settings -> observe -> plan -> declare."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from components.appliance import Appliance, ApplianceArgs
from components.dynamic import DynamicProviders
from planning.plan import Plan, plan
from planning.settings import APPLIANCE_NAME
from program.observe import observe
from program.problems import warn_on_problems
from program.report import log_run
from program.settings import Settings
from providers.direct_runtime import DirectRuntimeProvider
from providers.offloading_store import OffloadingProfileProvider
from providers.ollama import OllamaAliasProvider
from providers.pod_recovery import PodRecoveryProvider
from providers.profile_store import RuntimeProfileProvider
from providers.stale_removal import StaleRemovalProvider
from providers.status_writer import StatusProvider


def kubernetes_provider(settings: Settings) -> k8s.Provider:
    """The one provider of the run: server-side apply, adopt existing objects, mutable ConfigMaps.

    Without a kubeconfig the provider falls back to the ambient one: KUBECONFIG, ~/.kube/config,
    or the in-cluster service account when the program runs under the Pulumi Kubernetes Operator.
    Kubeconfig contents (not a path) hold credentials and enter the state only as a secret.
    """
    kubeconfig = settings.kubeconfig
    contents = kubeconfig is not None and "\n" in kubeconfig
    return k8s.Provider(
        "kubernetes",
        kubeconfig=pulumi.Output.secret(kubeconfig) if contents else kubeconfig,
        context=settings.context,
        enable_server_side_apply=True,
        upsert_existing_objects=True,
        enable_config_map_mutable=True,
    )


def run() -> Plan:
    settings = Settings.from_config()
    snapshot = observe(settings)
    desired = plan(
        snapshot=snapshot,
        catalogs=load_catalogs(settings.catalog_dir),
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
                status=StatusProvider(),
                runtime_profile=RuntimeProfileProvider(),
                pod_recovery=PodRecoveryProvider(),
                ollama_alias=OllamaAliasProvider(),
                stale_removal=StaleRemovalProvider(),
                offloading_profile=OffloadingProfileProvider(),
                direct_runtime=DirectRuntimeProvider(),
            ),
        ),
        opts=pulumi.ResourceOptions(providers=[provider]),
    )
    log_run(desired)
    warn_on_problems(appliance.operations)
    pulumi.export("phase", next((s.status["phase"] for s in desired.statuses if s.kind == "Appliance"), None))
    return desired
