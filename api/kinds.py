"""The kinds of appliance.magicstick.dev/v1alpha1: one registry. PURE.

Every list of the kinds derives from APPLIANCE_KINDS: the spec types (api.validation), the CRDs
(api.crdgen), what the snapshot reads (planning.snapshot), the kinds the Kubernetes client and
the live reader use (providers.kinds, providers.live_reader), the status writes
(components.appliance) and the reconcile trigger's watches. A new kind is one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from pydantic import BaseModel

from api.appliance import ApplianceSpec
from api.hostoperations import HostOperationSpec, HostOperationStatus
from api.instances import AppInstanceSpec
from api.meta import GROUP, VERSION
from api.models import ModelActivationSpec
from api.modules import ModuleActivationSpec
from api.setup import ApplianceSetupSpec, ApplianceSetupStatus
from api.status import ApplianceStatus

SETUP_NAMESPACE: Final = "identity-system"
"""Where the host automation's kinds live, whatever the system namespace."""


class Home(StrEnum):
    """The namespace a kind's objects live in."""

    SYSTEM = "system"
    """The run's system namespace."""
    SETUP = "setup"
    """SETUP_NAMESPACE."""


class StatusAuthor(StrEnum):
    """Who writes a kind's status."""

    PROGRAM = "program"
    HOST_WORKER = "host worker"
    HOST_AUTOMATION = "host automation"


@dataclass(frozen=True)
class PrinterColumn:
    """One column of ``kubectl get``."""

    name: str
    json_path: str
    type: str = "string"

    def to_wire(self) -> dict[str, str]:
        return {"name": self.name, "jsonPath": self.json_path, "type": self.type}


@dataclass(frozen=True, kw_only=True)
class ApplianceKind:
    """One kind of the API: its names, where its objects live, its types and its presentation."""

    kind: str
    plural: str
    spec_type: type[BaseModel]
    group: str = GROUP
    version: str = VERSION
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    home: Home = Home.SYSTEM
    status_subresource: bool = True
    status_author: StatusAuthor = StatusAuthor.PROGRAM
    status_type: type[BaseModel] | None = None
    """The closed type of the status; None: an open status (crdgen's generic schema)."""
    open_status_fields: tuple[type[BaseModel], tuple[str, ...]] | None = None
    """Fields of an open status typed in the schema: these wire names of this model's schema;
    every other field stays free."""
    columns: tuple[PrinterColumn, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """The name of its CustomResourceDefinition."""
        return f"{self.plural}.{self.group}"

    def namespace(self, system_namespace: str) -> str:
        """The namespace its objects live in, for a run whose system namespace is `system_namespace`."""
        return SETUP_NAMESPACE if self.home is Home.SETUP else system_namespace


APPLIANCE = ApplianceKind(
    kind="Appliance",
    plural="appliances",
    spec_type=ApplianceSpec,
    short_names=("msapp", "appliance"),
    columns=(PrinterColumn("Profile", ".spec.profile"),),
    open_status_fields=(ApplianceStatus, ("nextReconcileAt", "nextReconcileReason")),
)
MODULE_ACTIVATION = ApplianceKind(
    kind="ModuleActivation",
    plural="moduleactivations",
    spec_type=ModuleActivationSpec,
    columns=(PrinterColumn("Module", ".spec.module"), PrinterColumn("Enabled", ".spec.enabled", "boolean")),
)
MODEL_ACTIVATION = ApplianceKind(
    kind="ModelActivation",
    plural="modelactivations",
    spec_type=ModelActivationSpec,
    columns=(PrinterColumn("Type", ".spec.type"), PrinterColumn("Enabled", ".spec.enabled", "boolean")),
)
APP_INSTANCE = ApplianceKind(
    kind="AppInstance",
    plural="appinstances",
    spec_type=AppInstanceSpec,
    columns=(PrinterColumn("Application", ".spec.application"), PrinterColumn("Enabled", ".spec.enabled", "boolean")),
)
HOST_OPERATION = ApplianceKind(
    kind="HostOperation",
    plural="hostoperations",
    spec_type=HostOperationSpec,
    status_author=StatusAuthor.HOST_WORKER,
    open_status_fields=(HostOperationStatus, ("networks",)),
    columns=(PrinterColumn("Action", ".spec.action"), PrinterColumn("Node", ".spec.nodeName")),
)
APPLIANCE_SETUP = ApplianceKind(
    kind="ApplianceSetup",
    plural="appliancesetups",
    spec_type=ApplianceSetupSpec,
    home=Home.SETUP,
    status_author=StatusAuthor.HOST_AUTOMATION,
    status_type=ApplianceSetupStatus,
)

APPLIANCE_KINDS: tuple[ApplianceKind, ...] = (
    APPLIANCE,
    MODULE_ACTIVATION,
    MODEL_ACTIVATION,
    APP_INSTANCE,
    HOST_OPERATION,
    APPLIANCE_SETUP,
)
"""Every kind of the API, in the order the CRDs are installed, read and watched."""
