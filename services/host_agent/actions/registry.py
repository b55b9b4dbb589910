"""Every HostOperation action the agent carries out, by its spec.action."""

from __future__ import annotations

from services.host_agent.actions.base import Action
from services.host_agent.actions.cache import CLEAR_MODEL_CACHE
from services.host_agent.actions.gpu import CONFIGURE_GPU_MEMORY, PREPARE_GPU
from services.host_agent.actions.network import CONFIGURE_NETWORK
from services.host_agent.actions.power import POWEROFF, REBOOT
from services.host_agent.actions.wifi_scan import SCAN_WIFI

ACTIONS: dict[str, Action] = {
    action.action: action
    for action in (CLEAR_MODEL_CACHE, REBOOT, POWEROFF, PREPARE_GPU, CONFIGURE_GPU_MEMORY, CONFIGURE_NETWORK, SCAN_WIFI)
}
