"""What the agent reads from a host's file systems, and what it never reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.host_evidence import HOST_PLANS_ANNOTATION
from services.host_agent.evidence import allocation_mode
from services.host_agent.facts import HostFactError, architecture_of, read_host_facts
from tests.services.host_agent.fake_host import (
    BOARD_SERIAL,
    BOOT_ID,
    GPU_SLOT,
    KERNEL,
    MAC,
    NIC_SLOT,
    cpu_only,
    strix_halo,
)
from tests.services.host_agent.stand_ins import context


def test_a_strix_halo_host_reports_its_gpu_architecture_driver_and_memory(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    facts = read_host_facts(tmp_path)
    assert (facts.boot_id, facts.kernel) == (BOOT_ID, KERNEL)
    assert facts.pci_gpus == ("1002:1586",)
    assert facts.architecture == "gfx1151"
    assert facts.driver_ready
    assert facts.memory_total_mi == 128000
    assert facts.gpu_memory is not None and (facts.gpu_memory.vram_mi, facts.gpu_memory.gtt_mi) == (512, 98304)


@pytest.mark.parametrize(
    ("version", "name"), [(110501, "gfx1151"), (90010, "gfx90a"), (110000, "gfx1100"), (90402, "gfx942")]
)
def test_kfd_target_versions_name_the_architecture_as_the_driver_does(version: int, name: str) -> None:
    assert architecture_of(version) == name


def test_a_host_without_a_gpu_reports_none_and_offers_no_gpu_plans(tmp_path: Path) -> None:
    cpu_only(tmp_path)
    facts = read_host_facts(tmp_path)
    assert (facts.pci_gpus, facts.architecture, facts.driver_ready, facts.gpu_memory) == ((), "", False, None)
    plans = context(tmp_path).host.plans.by_action()
    assert set(plans) == {"clear-model-cache", "configure-network"}


def test_the_driver_is_not_ready_without_dev_kfd(tmp_path: Path) -> None:
    host = strix_halo(tmp_path)
    (host.root / "dev/kfd").unlink()
    assert not read_host_facts(tmp_path).driver_ready


def test_a_host_whose_boot_id_cannot_be_read_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(HostFactError, match="boot ID cannot be read from .*boot_id"):
        read_host_facts(tmp_path)


def test_nothing_identifying_leaves_the_host_in_what_the_agent_publishes(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    published = json.dumps(context(tmp_path).host.annotations())
    for secret in (MAC, GPU_SLOT, NIC_SLOT, BOARD_SERIAL, "0123456789abcdef"):
        assert secret not in published


def test_the_plans_name_interfaces_without_their_addresses(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    plans = json.loads(str(context(tmp_path).host.annotations()[HOST_PLANS_ANNOTATION]))
    assert plans["network"]["interfaces"] == [{"name": "eth0", "operstate": "up", "wireless": False}]


def test_a_carve_out_smaller_than_the_gtt_pool_is_shared_gtt_and_a_larger_one_firmware_reserved(tmp_path: Path) -> None:
    host = strix_halo(tmp_path)
    assert allocation_mode(read_host_facts(tmp_path)) == "shared-gtt"
    (host.root / "sys/class/drm/card1/device/mem_info_vram_total").write_text(str(100 * 1024**3))
    assert allocation_mode(read_host_facts(tmp_path)) == "firmware-reserved"
