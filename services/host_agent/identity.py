"""The agent renews its own Node-bound token before it expires.

install.sh writes a token of the ServiceAccount bound to this Node and a kubeconfig whose user
reads it from a file (`tokenFile`, read again by the client as it changes). Once an hour has
passed since the token was issued (or two thirds of its lifetime, when that is sooner), the
agent asks the TokenRequest API for a new one of the same lifetime, at most MAX_TOKEN_SECONDS,
bound to the same Node (its name and UID), and replaces the file atomically. Renewing hourly
keeps almost the whole lifetime ahead: a node switched off for up to about a week still renews
when it comes back. The admission policy lets it request tokens bound to its own Node only, for
the API server's audience, for at most MAX_TOKEN_SECONDS (its `tokenMaxSeconds`).

The token's claims are read without verifying its signature: the API server verifies it on
every request; the agent only needs to know when it was issued, when it expires, and for which
ServiceAccount.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt
import yaml

from services.host_agent.cluster import AgentCluster
from services.host_agent.journal import durable_write

LOGGER = logging.getLogger("services.host_agent")
RENEW_AFTER = 2 / 3
"""The fraction of a token's lifetime after which it is renewed at the latest."""
RENEW_EVERY_SECONDS = 3600
"""A token is renewed once it is this old, when that comes before RENEW_AFTER of its lifetime."""
MAX_TOKEN_SECONDS = 7 * 24 * 3600
"""The longest lifetime the agent requests; admission-policy.yaml refuses a longer one."""


class TokenError(Exception):
    """The kubeconfig names no token file, or the token in it is not a ServiceAccount token."""


@dataclass(frozen=True)
class ServiceAccountToken:
    namespace: str
    service_account: str
    issued_at: int
    expires_at: int

    @property
    def lifetime_seconds(self) -> int:
        return self.expires_at - self.issued_at

    def due(self, now: datetime) -> bool:
        return now.timestamp() >= self.issued_at + min(self.lifetime_seconds * RENEW_AFTER, RENEW_EVERY_SECONDS)

    @property
    def renewal_seconds(self) -> int:
        """The lifetime of its successor: the same, capped (install.sh's first token may be longer)."""
        return min(self.lifetime_seconds, MAX_TOKEN_SECONDS)


def token_file(kubeconfig: Path) -> Path | None:
    """The `tokenFile` of the kubeconfig's current user, or None when it holds the token inline."""
    config = yaml.safe_load(kubeconfig.read_text()) or {}
    context_name = config.get("current-context")
    context = next((c.get("context") or {} for c in config.get("contexts") or () if c.get("name") == context_name), {})
    user = next((u.get("user") or {} for u in config.get("users") or () if u.get("name") == context.get("user")), {})
    path = user.get("tokenFile")
    return Path(path) if isinstance(path, str) and path else None


def read_token(path: Path) -> ServiceAccountToken:
    try:
        claims: dict[str, Any] = jwt.decode(path.read_text().strip(), options={"verify_signature": False})
    except (OSError, jwt.PyJWTError) as error:
        raise TokenError(f"the token in {path} cannot be read: {error}") from error
    kubernetes = claims.get("kubernetes.io") or {}
    account = (kubernetes.get("serviceaccount") or {}).get("name")
    namespace = kubernetes.get("namespace")
    if not (
        isinstance(account, str)
        and isinstance(namespace, str)
        and isinstance(claims.get("iat"), int)
        and isinstance(claims.get("exp"), int)
    ):
        raise TokenError(
            f"the token in {path} is not a bound ServiceAccount token (no kubernetes.io claims, iat or exp)"
        )
    return ServiceAccountToken(
        namespace=namespace, service_account=account, issued_at=claims["iat"], expires_at=claims["exp"]
    )


def renew_if_due(cluster: AgentCluster, *, path: Path, now: datetime) -> bool:
    """Replace the token in `path` when it is due; True when renewed. Raises TokenError, KubeError."""
    token = read_token(path)
    if not token.due(now):
        return False
    node = cluster.node()
    fresh = cluster.node_bound_token(
        namespace=token.namespace, service_account=token.service_account, seconds=token.renewal_seconds, node=node
    )
    durable_write(path, fresh, mode=0o600)
    LOGGER.info(
        "renewed the agent's token (valid %d s, bound to Node %s)", token.renewal_seconds, node["metadata"]["name"]
    )
    return True
