"""configure-network: the host's network, changed only with a way back.

configure-network binds the network plan (the interface inventory and the netplan files, by
planId) and names one Secret of the network Secrets' namespace (`magicstick-host-network`, the
agent's `--network-namespace`), pinned by UID (spec.networkRef). The
Secret's data (base64, as the API server returns it) holds the whole configuration:

- `interface` (required): one of the host's interfaces;
- `ssid`, optional `password`: a Wi-Fi network (the interface must be wireless; a wireless
  interface needs an ssid); no password is an open network;
- `addresses` (comma-separated CIDRs), `gateway` (an IP, with addresses), `nameservers`
  (comma-separated IPs): a static configuration; without addresses the interface uses DHCP.

Every viewer of HostOperations reads their status, so it is no oracle for Secrets: a Secret the
request cannot use (missing, of another UID, not readable by the agent, or holding a key that is
no setting) gets one message (UNUSABLE), the same whatever the cause, which tells neither
whether the name exists nor any key's name; the agent's log says which it was (WARNING). Once the
Secret is the one requested (its UID, which only a reader of it knows), a value that breaks its
rule is refused (NetworkSecretInvalid) naming the setting (one of the public SECRET_KEYS) and
the rule, never the value. The password is never put in a status, a log line, an ended journal
entry or an exception.

The `started` entry keeps every netplan file as it was (netplan.saved_configuration): while the
change is in flight they are its way back, and they may hold an earlier password (the agent's
own earlier file, or the administrator's). Every ending drops them (the engine keeps only what
the last step gives: the confirmation deadline at most). The agent
then writes its own file (/etc/netplan/90-magicstick.yaml, mode 0600), lets `netplan generate`
judge the whole configuration (refused: the saved files are restored, nothing was applied) and
runs `netplan apply`. The operation then waits (AwaitingConfirmation, stage `applied`) until
the annotation CONFIRMATION_ANNOTATION carries its requestID (Succeeded: Confirmed) or the
confirmation deadline passes: the saved files are restored and applied again (RolledBack:
ConfirmationTimedOut). The deadline is kept in the journal entry, so it survives restarts. An
agent that stopped mid-change (`started` only) restores and applies the saved files too
(RolledBack: Interrupted): a rollback, never a repeat of the change.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from api.hostoperations import CONFIRMATION_ANNOTATION, HostOperationReason, HostPhase
from providers.kube import KubeError
from services.host_agent.actions.base import Action, ActionContext, Step, interrupted_by, uncertain
from services.host_agent.actions.errors import transient
from services.host_agent.actions.network_settings import (
    NetworkSettings,
    SecretRefusal,
    netplan_yaml,
    network_settings,
    quoted,
    where,
)
from services.host_agent.commands import CommandResult
from services.host_agent.evidence import rfc3339
from services.host_agent.journal import Entry, Outcome, Stage, durable_write
from services.host_agent.netplan import (
    NETPLAN_DIR,
    NETPLAN_FILE,
    netplan_dir,
    restore_configuration,
    saved_configuration,
)
from services.host_agent.requests import HostOperation, failed

LOGGER = logging.getLogger("services.host_agent")

REDACTED: Final = "[redacted]"
_CREDENTIAL_WORDS = re.compile(r"password|passphrase|psk", re.IGNORECASE)
_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
UNUSABLE: Final = (
    "spec.networkRef: {secret} cannot be used by this request. It must exist with the UID spec.networkRef.uid names, be "
    "readable by the host agent and hold only configure-network's settings; which of these failed is in the agent's log "
    "on node {node}. Make a new request once it is fixed"
)


def _withheld(result: CommandResult, secrets: Sequence[str]) -> str:
    """The command's failure in one line, with no credential in it: a known secret is replaced,
    and a line that speaks of a password or key is not shown at all."""
    text = result.failure()
    for secret in secrets:
        for form in {secret, quoted(secret), quoted(secret)[1:-1]}:
            if form:
                text = text.replace(form, REDACTED)
    if _CREDENTIAL_WORDS.search(text):
        return f"`{' '.join(result.argv)}` exited with {result.returncode} (its output is withheld: it may quote a credential)"
    return text


def _saved(entry: Entry) -> dict[str, dict[str, str | int]] | None:
    saved = entry.data.get("saved")
    return saved if isinstance(saved, dict) else None


def _restore(context: ActionContext, saved: dict[str, dict[str, str | int]]) -> str | None:
    """Put the saved netplan files back; None, or why it failed."""
    try:
        restore_configuration(context.settings.root, saved)
    except (OSError, ValueError, KeyError) as error:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        return f"the saved netplan files cannot be restored in /{NETPLAN_DIR}: {detail}"
    return None


def _restore_and_apply(
    context: ActionContext, saved: dict[str, dict[str, str | int]], secrets: Sequence[str] = ()
) -> str | None:
    """Restore the saved files and `netplan apply` them; None, or what failed."""
    problem = _restore(context, saved)
    if problem is not None:
        return problem
    applied = context.runner.run(["netplan", "apply"])
    return None if applied.ok else _withheld(applied, secrets)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _deadline(entry: Entry) -> datetime | None:
    try:
        return datetime.strptime(str(entry.data.get("confirmationDeadline") or ""), _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


def _unusable(operation: HostOperation, context: ActionContext, secret: str, why: str) -> Outcome:
    """The one refusal of a Secret the request cannot use; `why` (no value in it) goes to the log only."""
    LOGGER.warning("HostOperation %s: %s cannot be used: %s", operation.key, secret, why)
    return failed(
        HostOperationReason.NETWORK_SECRET_INVALID, UNUSABLE.format(secret=secret, node=context.settings.node_name)
    )


class ConfigureNetwork(Action):
    action = "configure-network"

    def _settings(self, operation: HostOperation, context: ActionContext) -> NetworkSettings | Outcome:
        spec = operation.spec
        assert spec is not None
        ref = spec.network_ref
        if ref is None:
            return failed(
                HostOperationReason.REJECTED,
                "spec.networkRef: is required for configure-network (the Secret holding the settings)",
            )
        secret_name = where(context.cluster.network_namespace, ref.name)
        try:
            secret = context.cluster.secret(ref.name)
        except KubeError as error:
            if transient(error):
                raise
            return _unusable(operation, context, secret_name, f"the API server refused to read it: {error.detail}")
        if secret is None:
            return _unusable(operation, context, secret_name, "it does not exist")
        uid = str((secret.get("metadata") or {}).get("uid") or "")
        if uid != ref.uid:
            return _unusable(
                operation,
                context,
                secret_name,
                f"its UID is {uid}, not {ref.uid} (spec.networkRef.uid): it was replaced after the request was made",
            )
        settings = network_settings(secret.get("data") or {}, context.host.facts.interfaces)
        if isinstance(settings, SecretRefusal):
            if not settings.names_a_setting:
                return _unusable(operation, context, secret_name, settings.text("its data"))
            return failed(HostOperationReason.NETWORK_SECRET_INVALID, settings.text(secret_name))
        return settings

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        settings = self._settings(operation, context)
        return settings if isinstance(settings, Outcome) else None

    def announce(self, operation: HostOperation) -> Outcome:
        ref = operation.spec.network_ref if operation.spec is not None else None
        named = f" of Secret {ref.name}" if ref is not None else ""
        return Outcome(
            phase=HostPhase.APPLYING,
            reason=HostOperationReason.IN_PROGRESS.value,
            message=f"applying the network configuration{named}",
        )

    def journal(self, operation: HostOperation, context: ActionContext) -> dict[str, Any]:
        return {"saved": saved_configuration(context.settings.root)}

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        settings = self._settings(operation, context)
        if isinstance(settings, Outcome):
            return Step(settings)
        saved = _saved(entry)
        if saved is None:
            return Step(
                failed(
                    HostOperationReason.REJECTED,
                    "the journal entry holds no saved netplan configuration; nothing was changed",
                )
            )
        secrets = [settings.password] if settings.password else []
        root = context.settings.root
        path = netplan_dir(root) / NETPLAN_FILE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            durable_write(path, netplan_yaml(settings, operation), mode=0o600)
            os.chmod(path, 0o600)
        except OSError as error:
            problem = _restore(context, saved)
            restored = problem or "the saved netplan files are restored"
            return Step(
                failed(
                    HostOperationReason.COMMAND_FAILED,
                    f"/{NETPLAN_DIR}/{NETPLAN_FILE} cannot be written: {error.strerror}; {restored}",
                )
            )
        generated = context.runner.run(["netplan", "generate", "--root-dir", str(root)])
        if not generated.ok:
            problem = _restore(context, saved)
            restored = problem or "the saved netplan files are restored"
            return Step(
                failed(
                    HostOperationReason.COMMAND_FAILED,
                    f"netplan refused the configuration: {_withheld(generated, secrets)}; {restored}; nothing was applied",
                )
            )
        applied = context.runner.run(["netplan", "apply"])
        if not applied.ok:
            failure = _withheld(applied, secrets)
            problem = _restore_and_apply(context, saved, secrets)
            if problem is None:
                return Step(
                    Outcome(
                        phase=HostPhase.ROLLED_BACK,
                        reason=HostOperationReason.COMMAND_FAILED.value,
                        message=f"{failure}; the saved netplan files are restored and applied again",
                    )
                )
            return Step(failed(HostOperationReason.ROLLBACK_FAILED, f"{failure}; rolling back failed too: {problem}"))
        deadline = rfc3339(_aware(context.now) + timedelta(seconds=context.settings.confirmation_seconds))
        confirm = f"kubectl annotate hostoperation {operation.name} -n {operation.namespace} {CONFIRMATION_ANNOTATION}={operation.request_id}"
        return Step(
            Outcome(
                phase=HostPhase.AWAITING_CONFIRMATION,
                reason=HostOperationReason.AWAITING_CONFIRMATION.value,
                message=f"{settings.summary} is applied; confirm it by {deadline} (`{confirm}`) or it is rolled back",
                details={"confirmationDeadline": deadline},
            ),
            stage=Stage.APPLIED,
            data={"saved": saved, "confirmationDeadline": deadline},
        )

    def follow(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step | None:
        if entry.stage is not Stage.APPLIED:
            return None
        deadline_text = str(entry.data.get("confirmationDeadline") or "")
        kept = {"confirmationDeadline": deadline_text} if deadline_text else {}
        # An ended entry keeps no saved files: old credentials among them are not kept longer.
        ended = {"confirmationDeadline": deadline_text or "unknown"}
        if operation.request_id and operation.annotations.get(CONFIRMATION_ANNOTATION) == operation.request_id:
            return Step(
                Outcome(
                    phase=HostPhase.SUCCEEDED,
                    reason=HostOperationReason.CONFIRMED.value,
                    message=f"the network configuration is confirmed ({CONFIRMATION_ANNOTATION}) and stays",
                    details=kept,
                ),
                data=ended,
            )
        deadline = _deadline(entry)
        if deadline is not None and _aware(context.now) < deadline:
            return None
        saved = _saved(entry)
        if saved is None:
            return Step(
                failed(
                    HostOperationReason.ROLLBACK_FAILED,
                    "not confirmed in time, and the journal entry holds no saved netplan configuration",
                )
            )
        problem = _restore_and_apply(context, saved)
        if problem is not None:
            return Step(
                Outcome(
                    phase=HostPhase.FAILED,
                    reason=HostOperationReason.ROLLBACK_FAILED.value,
                    message=f"not confirmed by {deadline_text or 'the deadline'}; rolling back failed: {problem}",
                    details=kept,
                ),
                data=ended,
            )
        return Step(
            Outcome(
                phase=HostPhase.ROLLED_BACK,
                reason=HostOperationReason.CONFIRMATION_TIMED_OUT.value,
                message=f"not confirmed by {deadline_text or 'the deadline'}: the saved netplan files are restored and applied again",
                details=kept,
            ),
            data=ended,
        )

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        saved = _saved(entry)
        if saved is None:
            return uncertain(entry, "The journal entry holds no saved netplan configuration to restore.", cause=cause)
        change = f"applying the network configuration in boot {entry.boot_id} {interrupted_by(cause)}"
        problem = _restore_and_apply(context, saved)
        if problem is not None:
            return failed(HostOperationReason.ROLLBACK_FAILED, f"{change}; rolling back failed: {problem}")
        return Outcome(
            phase=HostPhase.ROLLED_BACK,
            reason=HostOperationReason.INTERRUPTED.value,
            message=f"{change}; the saved netplan files are restored and applied again, and the change is not repeated: "
            "make a new request if it is still wanted",
        )


CONFIGURE_NETWORK = ConfigureNetwork()
