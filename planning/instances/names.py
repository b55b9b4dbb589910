"""The names one AppInstance holds alone: hostnames, its Helm release, its backend Service. Pure.

Rules:

1. The instance name (`spec.values.name`, else the object's name) is the first label of both
   hostnames, `<instance name>.<application>.<domain>`, so it must be a DNS label.
2. A new instance's Helm release is `<application>-<instance name>`, shortened to Helm's 53
   characters with the stable hash of planning.names. Application names never extend one
   another by a dash (catalogs.checks), so two instances get the same release name only when
   they have the same application and instance name: the same hostnames, a true collision.
3. An existing release keeps its name. Flux uninstalls and reinstalls a release whose
   `releaseName` changes, so the name a HelmRelease was created with (observed in the
   snapshot) is kept for as long as that HelmRelease exists, whatever the scheme or the
   instance name says now.
4. The backend Service is what the application's chart renders, named after the release
   (`.Release.Name`): the catalog's `backendService` template applied to the release name. The
   release name and the Service name therefore always agree.

The HelmRelease object itself is named after the AppInstance (unique in the system namespace)
and keeps that name; only its `releaseName` follows these rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from catalogs import ApplicationEntry
from planning.instances.releases import HELM_RELEASE_NAME_LIMIT
from planning.names import fit
from planning.snapshot import GenericObject

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class InstanceNames:
    """What one valid, enabled instance is called."""

    instance_name: str
    """The first label of its hostnames."""
    release: str
    """The Helm release name: kept from the observed HelmRelease, else derived."""
    backend_service: str
    """The Service its routes lead to, in its target namespace."""


def instance_name_of(*, values: Any, object_name: str) -> str:
    """`spec.values.name` when set, else the AppInstance's name. Pure."""
    named = values.get("name") if hasattr(values, "get") else None
    return str(named) if named not in (None, "") else object_name


def instance_name_problem(name: str) -> str | None:
    """Why `name` cannot be the first label of a hostname, or None. Pure."""
    if _DNS_LABEL.match(name):
        return None
    return (
        f"spec.values.name: {name!r} must be a DNS label (lower-case letters, digits and '-', starting and ending "
        "with a letter or digit, at most 63 characters): it is the first label of the instance's hostnames"
    )


def derived_release_name(*, application: str, instance_name: str) -> str:
    """`<application>-<instance name>`, at most 53 characters (stable hash suffix). Pure."""
    return fit(f"{application}-{instance_name}", HELM_RELEASE_NAME_LIMIT)


def release_name_of(*, spec: Mapping[str, Any], name: str) -> str:
    """The Helm release name of a HelmRelease called `name`: `spec.releaseName`, else Flux's
    default `[<targetNamespace>-]<name>`. Pure."""
    named = spec.get("releaseName")
    if isinstance(named, str) and named:
        return named
    target = spec.get("targetNamespace")
    return f"{target}-{name}" if isinstance(target, str) and target else name


def release_namespace_of(*, spec: Mapping[str, Any], namespace: str) -> str:
    """Where a HelmRelease stored in `namespace` installs: `spec.targetNamespace`, else its own. Pure."""
    target = spec.get("targetNamespace")
    return target if isinstance(target, str) and target else namespace


def instance_names(
    *, application: ApplicationEntry, instance_name: str, observed_release: GenericObject | None
) -> InstanceNames:
    """The release and backend Service of an instance, keeping an existing release's name. Pure."""
    if observed_release is not None:
        release = release_name_of(spec=observed_release.spec, name=observed_release.meta.name)
    else:
        release = derived_release_name(application=application.name, instance_name=instance_name)
    return InstanceNames(
        instance_name=instance_name,
        release=release,
        backend_service=application.backend_service_for(release),
    )
