"""What every request of the dashboard needs: its user, and the API access acting as that user."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from catalogs import Catalogs
from providers.kube import KubeClient
from services.dashboard.cluster import RuntimeRequests
from services.dashboard.hub import StreamHub
from services.dashboard.identity import Identity
from services.dashboard.session import SignIn


@dataclass(frozen=True)
class DashboardState:
    """What the application holds for its lifetime (app.state.dashboard)."""

    sign_in: SignIn
    kube: KubeClient
    """The dashboard's own client; used only through `impersonating`."""
    live: StreamHub
    """The open live status streams and their watches, on a connection pool of their own (live.py)."""
    catalogs: Catalogs
    namespace: str
    stack_name: str = "magicstick"


def state_of(request: Request) -> DashboardState:
    state: DashboardState = request.app.state.dashboard
    return state


async def current_identity(request: Request) -> Identity:
    """The verified user of the request (raises IdentityRefused)."""
    return await state_of(request).sign_in.identity(request)


async def runtime_requests(request: Request) -> RuntimeRequests:
    """The runtime requests, read and written as the request's user."""
    state = state_of(request)
    identity = await state.sign_in.identity(request)
    request.state.identity = identity
    return RuntimeRequests.acting_as(state.kube, identity, namespace=state.namespace)


async def stream_hub_of(request: Request) -> StreamHub:
    """The hub (async: a plain function dependency would take a thread of the pool)."""
    return state_of(request).live


def stack_name_of(request: Request) -> str:
    return state_of(request).stack_name


def catalogs_of(request: Request) -> Catalogs:
    return state_of(request).catalogs
