"""Kubernetes access for the whole project: configuration, one client type, typed errors."""

from providers.kube.access import KubeAccess, open_client
from providers.kube.async_reader import AsyncReader, AsyncWatchStream, open_async_reader
from providers.kube.client import Collection, KubeClient, ResourceKind
from providers.kube.errors import (
    CauseType,
    Conflict,
    ConnectionFailure,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeConnectionError,
    KubeError,
    NotFound,
    ResourceVersionTooLarge,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from providers.kube.retry import RetryPolicy
from providers.kube.watch import EventType, TcpKeepalive, WatchEvent, WatchStream

__all__ = [
    "AsyncReader",
    "AsyncWatchStream",
    "CauseType",
    "Collection",
    "Conflict",
    "ConnectionFailure",
    "EventType",
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
    "ResourceVersionTooLarge",
    "RetryPolicy",
    "ServerError",
    "TooManyRequests",
    "TcpKeepalive",
    "Unauthorized",
    "WatchEvent",
    "WatchStream",
    "open_async_reader",
    "open_client",
]
