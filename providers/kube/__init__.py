"""Kubernetes access for the whole project: configuration, one client type, typed errors."""

from providers.kube.access import KubeAccess, open_client
from providers.kube.retry import RetryPolicy
from providers.kube.client import KubeClient, ResourceKind
from providers.kube.errors import (
    Conflict,
    ConnectionFailure,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeConnectionError,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
)

__all__ = [
    "Conflict",
    "ConnectionFailure",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeAccess",
    "KubeClient",
    "KubeConfigError",
    "KubeConnectionError",
    "KubeError",
    "NotFound",
    "ResourceKind",
    "RetryPolicy",
    "ServerError",
    "TooManyRequests",
    "Unauthorized",
    "open_client",
]
