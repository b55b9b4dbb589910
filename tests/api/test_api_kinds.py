"""One registry of kinds: every list of the appliance kinds, and every group/version of another
project's kind, is derived from api/kinds.py and api/peer_kinds.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from api import crdgen, peer_kinds, validation
from api.kinds import APPLIANCE_KINDS, SETUP_NAMESPACE, Home, StatusAuthor
from api.meta import GROUP
from api.peer_kinds import FLUX_KUSTOMIZATION, KUBEAI_MODEL, NODE_FEATURE, PEER_KINDS, STACK
from components import appliance
from planning import kustomizations, operator, snapshot
from planning.hardware import amd_sharing
from planning.instances import access, guard, releases
from planning.models import kubeai, recovery
from providers import kinds, live_reader
from services.reconcile_trigger import watches

REPO_ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "ai-system"


def test_the_spec_types_are_the_registrys():
    assert {kind.kind: kind.spec_type for kind in APPLIANCE_KINDS} == validation.SPEC_TYPES


def test_the_generated_crds_are_the_registrys_kinds_in_its_order():
    assert crdgen.KINDS == APPLIANCE_KINDS
    assert [crd["spec"]["names"]["kind"] for crd in crdgen.build_crds()] == [kind.kind for kind in APPLIANCE_KINDS]


def test_the_snapshot_reads_the_registrys_kinds():
    assert tuple(kind.kind for kind in APPLIANCE_KINDS) == snapshot.RUNTIME_KINDS


def test_the_clients_appliance_kinds_are_the_registrys_as_the_api_serves_them():
    served = {name: (k.group, k.version, k.kind, k.plural, k.namespaced) for name, k in kinds.APPLIANCE_KINDS.items()}
    assert served == {k.kind: (k.group, k.version, k.kind, k.plural, k.namespaced) for k in APPLIANCE_KINDS}


def test_the_program_writes_the_status_of_the_kinds_the_registry_says_it_authors():
    assert {
        k.kind for k in APPLIANCE_KINDS if k.status_author is StatusAuthor.PROGRAM
    } == appliance.WRITTEN_STATUS_KINDS


def test_the_trigger_watches_every_registered_kind_where_it_lives():
    targets = watches.watch_targets(system_namespace=SYSTEM, target_namespaces=(), gateway_namespace=SYSTEM)
    filtered = (watches.Sensitivity.SPEC_AND_METADATA, watches.Sensitivity.SPEC_METADATA_AND_PHASE)
    watched = [(t.kind.kind, t.namespace) for t in targets if t.sensitivity in filtered]
    assert watched == [(k.kind, k.namespace(SYSTEM)) for k in APPLIANCE_KINDS]


def test_the_reader_lists_every_registered_kind_where_it_lives():
    names = {k.kind for k in APPLIANCE_KINDS}
    listed = [
        (r.kind.kind, r.namespace) for r in live_reader.reads(SYSTEM) if r.kind.kind in names and r.kind.group == GROUP
    ]
    assert listed == [(k.kind, k.namespace(SYSTEM)) for k in APPLIANCE_KINDS]


def test_the_setup_namespace_is_where_the_registry_puts_setup_kinds():
    assert live_reader.SETUP_NAMESPACE == SETUP_NAMESPACE
    assert {k.namespace(SYSTEM) for k in APPLIANCE_KINDS if k.home is Home.SETUP} == {SETUP_NAMESPACE}


def test_other_projects_group_versions_are_the_peer_registrys():
    assert FLUX_KUSTOMIZATION.api_version == snapshot.FLUX_KUSTOMIZE_API_VERSION
    assert NODE_FEATURE.api_version == snapshot.NFD_API_VERSION
    assert KUBEAI_MODEL.api_version == snapshot.KUBEAI_API_VERSION
    assert (STACK.api_version, STACK.kind) == (operator.STACK_API_VERSION, operator.STACK_KIND)
    assert {(k.api_version, k.kind) for k in PEER_KINDS} >= snapshot.GENERIC_KINDS


def test_the_objects_the_plan_generates_carry_the_peer_registrys_group_versions():
    assert FLUX_KUSTOMIZATION.api_version == kustomizations.KUSTOMIZATION_API_VERSION
    assert kubeai.MODEL_API_VERSION == recovery.MODEL_API_VERSION == KUBEAI_MODEL.api_version
    assert peer_kinds.HELM_RELEASE.api_version == releases.HELM_RELEASE_API_VERSION
    assert peer_kinds.HTTP_ROUTE.api_version == access.HTTPROUTE_API_VERSION
    assert peer_kinds.REFERENCE_GRANT.api_version == access.REFERENCE_GRANT_API_VERSION
    assert peer_kinds.SECURITY_POLICY.api_version == access.SECURITY_POLICY_API_VERSION
    assert peer_kinds.ENVOY_PROXY.api_version == guard.ENVOY_PROXY_API_VERSION
    assert peer_kinds.RESOURCE_CLAIM.api_version == amd_sharing.CLAIM_API_VERSION


def test_the_clients_peer_kinds_are_the_peer_registrys():
    peers = {(k.group, k.version, k.kind, k.plural, k.namespaced) for k in PEER_KINDS}
    served = [
        k
        for k in vars(kinds).values()
        if isinstance(k, kinds.ResourceKind) and k.group in {p.group for p in PEER_KINDS}
    ]
    assert {(k.group, k.version, k.kind, k.plural, k.namespaced) for k in served} <= peers


ADDED_KIND = textwrap.dedent(
    """
    import importlib
    import api.kinds
    from api.appliance import ApplianceSpec
    gadget = api.kinds.ApplianceKind(kind="Gadget", plural="gadgets", spec_type=ApplianceSpec)
    api.kinds.APPLIANCE_KINDS = (*api.kinds.APPLIANCE_KINDS, gadget)
    modules = ["api.validation", "api.crdgen", "planning.snapshot", "providers.kinds", "providers.live_reader",
               "services.reconcile_trigger.watches", "components.appliance"]
    for name in modules:
        importlib.reload(importlib.import_module(name))
    from api import crdgen, peer_kinds, validation
    from components import appliance
    from planning import snapshot
    from providers import kinds, live_reader
    from services.reconcile_trigger import watches
    reached = {
        "spec types": "Gadget" in validation.SPEC_TYPES,
        "crds": "gadgets.appliance.magicstick.dev" in {c["metadata"]["name"] for c in crdgen.build_crds()},
        "snapshot": "Gadget" in snapshot.RUNTIME_KINDS,
        "client": kinds.APPLIANCE_KINDS["Gadget"].plural == "gadgets",
        "status writes": "Gadget" in appliance.WRITTEN_STATUS_KINDS,
        "reads": any(r.kind.kind == "Gadget" for r in live_reader.reads("s")),
        "watches": any(t.kind.kind == "Gadget" for t in watches.watch_targets(system_namespace="s", target_namespaces=(), gateway_namespace="s")),
    }
    missed = sorted(name for name, ok in reached.items() if not ok)
    print(",".join(missed))
    """
)


def test_a_kind_added_to_the_registry_reaches_every_list_without_another_edit():
    result = subprocess.run(
        [sys.executable, "-c", ADDED_KIND], cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
