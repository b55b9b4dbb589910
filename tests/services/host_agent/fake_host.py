"""A host's file systems in a temporary directory, as a root the agent reads (its --root).

A Strix Halo workstation by default: the Radeon 8060S (PCI 1002:1586, class 0x038000) beside
an Ethernet controller, the KFD topology's CPU node and GPU node (gfx_target_version 110501:
gfx1151), amdgpu live with /dev/kfd, 128 GB of RAM with a 512 MiB carve-out and a 96 GiB GTT
pool, netplan's directory with the administrator's file, one Ethernet interface. It also holds
what must never leave the host (a MAC address, PCI slot addresses, the board's serial number),
so tests can check it does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BOOT_ID = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
KERNEL = "6.14.0-magicstick"
MAC = "aa:bb:cc:dd:ee:ff"
GPU_SLOT = "0000:c5:00.0"
NIC_SLOT = "0000:c4:00.0"
BOARD_SERIAL = "SERIAL-CHANGEME-0042"
MEMORY_TOTAL_KB = 131_072_000
VRAM_BYTES = 512 * 1024 * 1024
GTT_BYTES = 96 * 1024 * 1024 * 1024
ADMIN_NETPLAN = "network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@dataclass
class FakeHost:
    root: Path

    def boot(self, boot_id: str) -> None:
        """A reboot, as far as the agent can tell: a new boot ID."""
        _write(self.root / "proc/sys/kernel/random/boot_id", boot_id + "\n")

    def unload_driver(self) -> None:
        (self.root / "sys/module/amdgpu/initstate").unlink()
        (self.root / "dev/kfd").unlink()

    def cache(self, runtime: str) -> Path:
        return self.root / "var/lib/magicstick/model-cache" / runtime


def strix_halo(root: Path, *, boot_id: str = BOOT_ID, kernel: str = KERNEL) -> FakeHost:
    """A Strix Halo host below `root`."""
    host = FakeHost(root)
    host.boot(boot_id)
    _write(root / "proc/sys/kernel/osrelease", kernel + "\n")
    _write(root / "proc/meminfo", f"MemTotal:       {MEMORY_TOTAL_KB} kB\nMemFree:        1000 kB\n")
    gpu = root / "sys/bus/pci/devices" / GPU_SLOT
    for name, value in {
        "class": "0x038000",
        "vendor": "0x1002",
        "device": "0x1586",
        "subsystem_device": "0x0001",
    }.items():
        _write(gpu / name, value + "\n")
    nic = root / "sys/bus/pci/devices" / NIC_SLOT
    for name, value in {"class": "0x020000", "vendor": "0x10ec", "device": "0x8125"}.items():
        _write(nic / name, value + "\n")
    _write(root / "sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 16\ngfx_target_version 0\n")
    _write(
        root / "sys/class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 80\ngfx_target_version 110501\nlocation_id 50432\n",
    )
    _write(root / "sys/module/amdgpu/initstate", "live\n")
    _write(root / "dev/kfd", "")
    _write(root / "sys/class/drm/card1/device/mem_info_vram_total", f"{VRAM_BYTES}\n")
    _write(root / "sys/class/drm/card1/device/mem_info_gtt_total", f"{GTT_BYTES}\n")
    _write(root / "sys/class/drm/card1/device/unique_id", "0123456789abcdef\n")
    _write(root / "sys/class/dmi/id/product_serial", BOARD_SERIAL + "\n")
    _write(root / "sys/class/net/eth0/address", MAC + "\n")
    _write(root / "sys/class/net/eth0/operstate", "up\n")
    _write(root / "sys/class/net/lo/operstate", "unknown\n")
    netplan = root / "etc/netplan/50-cloud-init.yaml"
    _write(netplan, ADMIN_NETPLAN)
    netplan.chmod(0o600)
    for runtime in ("huggingface", "ollama"):
        _write(host.cache(runtime) / "models--example/blob.bin", "x" * 4096)
    return host


def cpu_only(root: Path) -> FakeHost:
    """A host without a GPU: no display device on PCI, no KFD, no amdgpu."""
    host = FakeHost(root)
    host.boot(BOOT_ID)
    _write(root / "proc/sys/kernel/osrelease", KERNEL + "\n")
    _write(root / "proc/meminfo", "MemTotal:       32768000 kB\n")
    return host
