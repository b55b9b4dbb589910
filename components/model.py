"""Model: one ModelActivation's runtime objects (the KubeAI Model, an alias, a Pod recovery)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.dynamic import DynamicProviders, OllamaAlias, PodRecovery, ollama_alias_name
from components.objects import declare
from planning.models.plan import ModelOutcome


@dataclass(frozen=True)
class ModelArgs:
    outcome: ModelOutcome
    """The planned runtime of one activation."""
    providers: DynamicProviders
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What must exist first: the runtime profile the Model names."""


class Model(pulumi.ComponentResource):
    TYPE = "magicstick:index:Model"

    def __init__(self, name: str, args: ModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        outcome = args.outcome
        model = None
        if outcome.model is not None:
            model = declare(outcome.model, opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)))
        after_model = pulumi.ResourceOptions(parent=self, depends_on=[model] if model is not None else [])
        if outcome.pod_deletion is not None:
            PodRecovery(outcome.pod_deletion, provider=args.providers.pod_recovery, opts=after_model)
        if outcome.alias is not None:
            OllamaAlias(outcome.alias, logical_name=ollama_alias_name(name), provider=args.providers.ollama_alias, opts=after_model)
        self.register_outputs({"model": outcome.model.identity if outcome.model is not None else None})
