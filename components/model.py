"""One ModelActivation's runtime resources (the KubeAI Model, an alias, a Pod recovery, or the
direct runtime of FreeToken and realtime vLLM-Omni), declared as children of the Appliance.

Earlier versions put them under a `magicstick:index:Model` component per activation. That
component bought a group in the engine's tree and nothing else (no outputs anything read, no
option its children inherited), at one registration per local model: the most numerous
resource of a large appliance after the status writes. Each resource now names the component's
URN as its former parent (an alias with `parent`), and with it every earlier logical name it
had there, so an existing stack moves its resources instead of replacing them; the engine then
deletes the empty component, which owns nothing in the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pulumi

from components.dynamic import (
    DirectRuntimeResource,
    DynamicProviders,
    OllamaAlias,
    PodRecovery,
    direct_runtime_name,
    ollama_alias_name,
    pod_recovery_name,
)
from components.objects import declare
from components.urns import qualified_type
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.models.plan import ModelOutcome

FORMER_COMPONENT_TYPE: Final = "magicstick:index:Model"
"""The type of the per-activation component earlier versions declared (named after the activation)."""


@dataclass(frozen=True)
class ModelArgs:
    outcome: ModelOutcome
    """The planned runtime of one activation."""
    providers: DynamicProviders
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What must exist first: the store entries (runtime or offloading profile) the Model names."""


class Model:
    """Declares one activation's resources under `parent` (the Appliance); not a resource itself."""

    operations: dict[str, PodRecovery | OllamaAlias | DirectRuntimeResource]
    """The activation's dynamic resources by logical name; each has the output `problem`."""

    def __init__(self, name: str, args: ModelArgs, *, parent: pulumi.Resource) -> None:
        outcome = args.outcome
        former = qualified_type(parent, FORMER_COMPONENT_TYPE)
        child = pulumi.ResourceOptions(parent=parent)
        model = None
        if outcome.model is not None:
            model = declare(
                outcome.model,
                opts=pulumi.ResourceOptions(parent=parent, depends_on=list(args.depends_on)),
                former_parent_type=former,
            )
        after_model = pulumi.ResourceOptions(parent=parent, depends_on=[model] if model is not None else [])
        self.operations = {}
        if outcome.pod_deletion is not None:
            recovery = pod_recovery_name(outcome.pod_deletion).name
            self.operations[recovery] = PodRecovery(
                outcome.pod_deletion, provider=args.providers.pod_recovery, opts=after_model, former_parent_type=former
            )
        if outcome.alias is not None:
            alias = ollama_alias_name(name)
            self.operations[alias.name] = OllamaAlias(
                outcome.alias,
                logical_name=alias,
                provider=args.providers.ollama_alias,
                opts=after_model,
                former_parent_type=former,
            )
        if outcome.runtime is not None:
            runtime = outcome.runtime
            manager = runtime.objects[0].body["metadata"]["annotations"][FIELD_MANAGER_ANNOTATION]
            self.operations[direct_runtime_name(runtime).name] = DirectRuntimeResource(
                runtime,
                provider=args.providers.direct_runtime,
                opts=child,
                field_manager=manager,
                former_parent_type=former,
            )

    @property
    def problems(self) -> dict[str, pulumi.Output[Any]]:
        """The `problem` output of each of the activation's dynamic resources, by logical name."""
        return {source: operation.problem for source, operation in self.operations.items()}
