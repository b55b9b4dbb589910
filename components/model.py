"""Model: one ModelActivation's runtime objects (the KubeAI Model, an alias, a Pod recovery, or
the direct runtime of FreeToken and realtime vLLM-Omni)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.models.plan import ModelOutcome


@dataclass(frozen=True)
class ModelArgs:
    outcome: ModelOutcome
    """The planned runtime of one activation."""
    providers: DynamicProviders
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What must exist first: the store entries (runtime or offloading profile) the Model names."""


class Model(pulumi.ComponentResource):
    TYPE = "magicstick:index:Model"

    operations: dict[str, PodRecovery | OllamaAlias | DirectRuntimeResource]
    """The activation's dynamic resources by logical name; each has the output `problem`."""

    def __init__(self, name: str, args: ModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        outcome = args.outcome
        model = None
        if outcome.model is not None:
            model = declare(outcome.model, opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)))
        after_model = pulumi.ResourceOptions(parent=self, depends_on=[model] if model is not None else [])
        self.operations = {}
        if outcome.pod_deletion is not None:
            recovery = pod_recovery_name(outcome.pod_deletion).name
            self.operations[recovery] = PodRecovery(outcome.pod_deletion, provider=args.providers.pod_recovery, opts=after_model)
        if outcome.alias is not None:
            alias = ollama_alias_name(name)
            self.operations[alias.name] = OllamaAlias(
                outcome.alias, logical_name=alias, provider=args.providers.ollama_alias, opts=after_model
            )
        if outcome.runtime is not None:
            runtime = outcome.runtime
            manager = runtime.objects[0].body["metadata"]["annotations"][FIELD_MANAGER_ANNOTATION]
            self.operations[direct_runtime_name(runtime).name] = DirectRuntimeResource(
                runtime, provider=args.providers.direct_runtime, opts=pulumi.ResourceOptions(parent=self), field_manager=manager
            )
        self.register_outputs({"model": outcome.model.identity if outcome.model is not None else None})

    @property
    def problems(self) -> dict[str, pulumi.Output[Any]]:
        """The `problem` output of each of the activation's dynamic resources, by logical name."""
        return {source: operation.problem for source, operation in self.operations.items()}
