"""The appliance.magicstick.dev/v1alpha1 API: typed specs, their rules and their CRDs.

Planning parses raw specs with :func:`parse_spec` and turns a :class:`SpecError` into the
object's status. CRD generation lives in :mod:`api.crdgen`.
"""

from api.appliance import ApplianceSpec, ModuleDefault, SourceRef
from api.hostoperations import HostOperationSpec, HostOperationStatus
from api.instances import APPLICATIONS, AccessSpec, AppInstanceSpec, SharingSpec, authentication_is_explicit
from api.meta import API_VERSION, GROUP, VERSION
from api.models import CpuResources, ExternalModelSpec, LocalModelSpec, ModelActivationSpec
from api.modules import ModuleActivationSpec
from api.setup import ApplianceSetupSpec, ApplianceSetupStatus
from api.validation import SPEC_TYPES, SpecError, parse_spec, validate_cpu_resources

__all__ = [
    "API_VERSION",
    "APPLICATIONS",
    "GROUP",
    "SPEC_TYPES",
    "VERSION",
    "AccessSpec",
    "AppInstanceSpec",
    "ApplianceSetupSpec",
    "ApplianceSetupStatus",
    "ApplianceSpec",
    "CpuResources",
    "ExternalModelSpec",
    "HostOperationSpec",
    "HostOperationStatus",
    "LocalModelSpec",
    "ModelActivationSpec",
    "ModuleActivationSpec",
    "ModuleDefault",
    "SharingSpec",
    "SourceRef",
    "SpecError",
    "authentication_is_explicit",
    "parse_spec",
    "validate_cpu_resources",
]
