"""Declare one planned Kubernetes object as a pulumi-kubernetes resource."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.urns import aliases
from planning.frozen import thaw
from planning.objects import DesiredObject


def declare(
    obj: DesiredObject, *, opts: pulumi.ResourceOptions, former_parent_type: str | None = None
) -> pulumi.CustomResource:
    """Map `obj` to its resource; its own lifecycle flags become resource options.

    `former_parent_type` is the qualified type of the component the resource lived under in
    earlier versions: its aliases then name that component, with the resource's name and with
    each earlier name (components/urns.py).

    CRDs use the typed CustomResourceDefinition so the provider applies its CRD handling; a
    patch of a Node (labels on an object the kubelet owns) is a NodePatch, whose deletion gives
    the fields back; a kind of the core group (apiVersion `v1`) uses its typed class, because
    the provider knows those as `kubernetes:core/v1:<Kind>` and refuses the `kubernetes:v1:<Kind>`
    a generic CustomResource would register; every other kind goes through CustomResource.

    A change of a field in `obj.replace_on_changes` replaces the object, deleting the old one
    first: the new one has the same name.
    """
    extra = pulumi.ResourceOptions(
        ignore_changes=["spec"] if obj.ignore_spec_changes else None,
        retain_on_delete=True if obj.retain_on_delete else None,
        replace_on_changes=list(obj.replace_on_changes) or None,
        delete_before_replace=True if obj.replace_on_changes else None,
        aliases=aliases(
            parent=opts.parent,
            type_=resource_type(obj),
            name=obj.logical_name,
            previous=obj.previous_logical_names,
            former_parent_type=former_parent_type,
        )
        or None,
    )
    options = pulumi.ResourceOptions.merge(opts, extra)
    body = thaw(obj.body)
    if obj.patch:
        if obj.kind != "Node":
            raise ValueError(f"{obj.identity}: only Node patches are declared")
        return k8s.core.v1.NodePatch(obj.logical_name, metadata=body["metadata"], opts=options)
    if obj.api_version == "v1" and obj.kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(obj.logical_name, metadata=body["metadata"], data=body.get("data"), opts=options)
    if obj.api_version == "v1" and obj.kind == "Service":
        return k8s.core.v1.Service(obj.logical_name, metadata=body["metadata"], spec=body.get("spec"), opts=options)
    if obj.api_version == "v1" and obj.kind == "PersistentVolume":
        return k8s.core.v1.PersistentVolume(
            obj.logical_name, metadata=body["metadata"], spec=body["spec"], opts=options
        )
    if obj.api_version == "v1" and obj.kind == "PersistentVolumeClaim":
        return k8s.core.v1.PersistentVolumeClaim(
            obj.logical_name, metadata=body["metadata"], spec=body["spec"], opts=options
        )
    if obj.api_version == "v1":
        raise ValueError(f"{obj.identity}: core kind {obj.kind} has no typed declaration (components/objects.py)")
    if obj.kind == "CustomResourceDefinition":
        return k8s.apiextensions.v1.CustomResourceDefinition(
            obj.logical_name,
            metadata=body["metadata"],
            spec=body["spec"],
            opts=options,
        )
    fields = {key: value for key, value in body.items() if key not in ("apiVersion", "kind", "metadata")}
    return k8s.apiextensions.CustomResource(
        obj.logical_name,
        api_version=obj.api_version,
        kind=obj.kind,
        metadata=body["metadata"],
        opts=options,
        **fields,
    )


def resource_type(obj: DesiredObject) -> str:
    """The type token of the resource `declare` registers for `obj`. Pure."""
    if obj.patch:
        return "kubernetes:core/v1:NodePatch"
    if obj.api_version == "v1":
        return f"kubernetes:core/v1:{obj.kind}"
    if obj.kind == "CustomResourceDefinition":
        return "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    return f"kubernetes:{obj.api_version}:{obj.kind}"
