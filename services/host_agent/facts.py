"""What the host says about itself, read from its file systems below a root.

Everything here is read from procfs and sysfs (or their copies in a prepared directory): the
boot ID and kernel release, the PCI display devices, the KFD topology's GPU architecture, the
amdgpu driver's presence, the memory the OS sees and the GPU memory the driver reports, and
the network interfaces. Serial numbers, MAC addresses and PCI slot addresses are never read
into these types, so they cannot leave the host by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PCI_DISPLAY_CLASS = "0x03"
"""PCI base class 03: display controllers (VGA, 3D, other)."""
AMD_VENDOR = "1002"
KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
PCI_DEVICES = "sys/bus/pci/devices"
DRM_CARDS = "sys/class/drm"
NET_INTERFACES = "sys/class/net"
MIB = 1024 * 1024


class HostFactError(Exception):
    """A fact every host has (boot ID, kernel release) cannot be read."""


@dataclass(frozen=True)
class GpuMemory:
    """What the amdgpu driver reports: the firmware carve-out (VRAM) and the GTT pool, in MiB."""

    vram_mi: int
    gtt_mi: int


@dataclass(frozen=True)
class NetworkInterface:
    name: str
    wireless: bool
    operstate: str


@dataclass(frozen=True)
class HostFacts:
    boot_id: str
    kernel: str
    pci_gpus: tuple[str, ...]
    """The display devices' "vendor:device" IDs, lower-case, sorted."""
    architecture: str
    """The first GPU architecture of the KFD topology (gfx1151), or ""."""
    driver_ready: bool
    """amdgpu is loaded (live) and /dev/kfd exists."""
    memory_total_mi: int
    """MemTotal: what the OS sees, in MiB."""
    gpu_memory: GpuMemory | None
    """The first amdgpu card's memory, when the driver reports one."""
    interfaces: tuple[NetworkInterface, ...]

    @property
    def amd_gpus(self) -> tuple[str, ...]:
        return tuple(device for device in self.pci_gpus if device.startswith(AMD_VENDOR + ":"))


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _required(root: Path, relative: str, what: str) -> str:
    value = _text(root / relative)
    if not value:
        raise HostFactError(f"{what} cannot be read from {root / relative}")
    return value


def _hex_id(value: str | None) -> str | None:
    if value is None or not value.startswith("0x"):
        return None
    return value[2:].lower()


def pci_gpus(root: Path) -> tuple[str, ...]:
    """The "vendor:device" IDs of the PCI display devices below `root`."""
    devices: list[str] = []
    base = root / PCI_DEVICES
    if not base.is_dir():
        return ()
    for entry in sorted(base.iterdir()):
        device_class = _text(entry / "class")
        if device_class is None or not device_class.lower().startswith(PCI_DISPLAY_CLASS):
            continue
        vendor, device = _hex_id(_text(entry / "vendor")), _hex_id(_text(entry / "device"))
        if vendor and device:
            devices.append(f"{vendor}:{device}")
    return tuple(sorted(devices))


def architecture_of(target_version: int) -> str:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) as gfx<major><minor><stepping>,
    minor and stepping in hex as the driver names them: 110501 -> gfx1151, 90010 -> gfx90a."""
    major, rest = divmod(target_version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor:x}{stepping:x}"


def kfd_architecture(root: Path) -> str:
    """The first GPU node's architecture in the KFD topology, or "" (CPU nodes report 0)."""
    base = root / KFD_NODES
    if not base.is_dir():
        return ""
    for node in sorted(base.iterdir(), key=lambda path: path.name):
        properties = _text(node / "properties") or ""
        for line in properties.splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip().isdigit() and int(value) > 0:
                return architecture_of(int(value))
    return ""


def driver_ready(root: Path) -> bool:
    return _text(root / "sys/module/amdgpu/initstate") == "live" and (root / "dev/kfd").exists()


def memory_total_mi(root: Path) -> int:
    for line in (_text(root / "proc/meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key == "MemTotal":
            amount = value.split()
            if amount and amount[0].isdigit():
                return int(amount[0]) // 1024
    return 0


def gpu_memory(root: Path) -> GpuMemory | None:
    base = root / DRM_CARDS
    if not base.is_dir():
        return None
    for card in sorted(base.glob("card[0-9]*")):
        vram, gtt = _text(card / "device/mem_info_vram_total"), _text(card / "device/mem_info_gtt_total")
        if vram and gtt and vram.isdigit() and gtt.isdigit():
            return GpuMemory(vram_mi=int(vram) // MIB, gtt_mi=int(gtt) // MIB)
    return None


def network_interfaces(root: Path) -> tuple[NetworkInterface, ...]:
    """The interfaces but loopback: name, Wi-Fi or not, operational state (never the address)."""
    base = root / NET_INTERFACES
    if not base.is_dir():
        return ()
    found = []
    for entry in sorted(base.iterdir(), key=lambda path: path.name):
        if entry.name == "lo":
            continue
        wireless = (entry / "wireless").exists() or (entry / "phy80211").exists()
        found.append(
            NetworkInterface(name=entry.name, wireless=wireless, operstate=_text(entry / "operstate") or "unknown")
        )
    return tuple(found)


def read_host_facts(root: Path) -> HostFacts:
    """Every fact below `root`. Raises HostFactError when the boot ID or kernel cannot be read."""
    return HostFacts(
        boot_id=_required(root, "proc/sys/kernel/random/boot_id", "the boot ID"),
        kernel=_required(root, "proc/sys/kernel/osrelease", "the kernel release"),
        pci_gpus=pci_gpus(root),
        architecture=kfd_architecture(root),
        driver_ready=driver_ready(root),
        memory_total_mi=memory_total_mi(root),
        gpu_memory=gpu_memory(root),
        interfaces=network_interfaces(root),
    )
