"""Where the tests find the toolchain that scripts/toolchain/build.sh builds.

The versions come from `scripts/toolchain/versions.env`, the file the build script sources, so
the tests and the build never disagree. Tools are found, never built here:
`$MAGICSTICK_<TOOL>` (an explicit path), else the build cache
(`$MAGICSTICK_TOOLCHAIN_CACHE`, default `~/.cache/magicstick/toolchain`). A missing tool is an
error naming the command that builds it, never a skip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
BUILD_SCRIPT: Final = REPO_ROOT / "scripts" / "toolchain" / "build.sh"
VERSIONS_FILE: Final = REPO_ROOT / "scripts" / "toolchain" / "versions.env"
CACHE_ENV: Final = "MAGICSTICK_TOOLCHAIN_CACHE"


class ToolNotFound(Exception):
    """A tool the tests need is not built; the message says how to build it."""


@dataclass(frozen=True)
class Versions:
    """The pinned versions of scripts/toolchain/versions.env."""

    pulumi: str
    pulumi_kubernetes: str
    kube: str
    etcd: str
    envoy_gateway: str
    helm: str
    flux: str
    source_controller: str
    kustomize_controller: str
    helm_controller: str
    coredns: str
    pko: str
    kubeai: str
    ollama: str


def parse_versions(text: str) -> dict[str, str]:
    """KEY=VALUE lines; blank lines and `#` comments ignored. Pure."""
    values = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, separator, value = stripped.partition("=")
        if not separator:
            raise ValueError(f"{VERSIONS_FILE.name}: not KEY=VALUE: {line!r}")
        values[key] = value
    return values


@cache
def versions() -> Versions:
    values = parse_versions(VERSIONS_FILE.read_text())
    return Versions(
        pulumi=values["PULUMI_VERSION"],
        pulumi_kubernetes=values["PULUMI_KUBERNETES_VERSION"],
        kube=values["KUBE_VERSION"],
        etcd=values["ETCD_VERSION"],
        envoy_gateway=values["ENVOY_GATEWAY_VERSION"],
        helm=values["HELM_VERSION"],
        flux=values["FLUX_VERSION"],
        source_controller=values["SOURCE_CONTROLLER_VERSION"],
        kustomize_controller=values["KUSTOMIZE_CONTROLLER_VERSION"],
        helm_controller=values["HELM_CONTROLLER_VERSION"],
        coredns=values["COREDNS_VERSION"],
        pko=values["PKO_VERSION"],
        kubeai=values["KUBEAI_VERSION"],
        ollama=values["OLLAMA_VERSION"],
    )


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path.home() / ".cache" / "magicstick" / "toolchain"


def tool(name: str, directory: str, *, env: str) -> Path:
    """The executable `name` in the cache's `directory`, or `$env` when set."""
    explicit = os.environ.get(env)
    path = Path(explicit) if explicit else cache_dir() / directory / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        origin = f"${env}" if explicit else "the toolchain cache"
        raise ToolNotFound(
            f"{name} not found at {path} ({origin}). Build the toolchain once with: "
            f"{BUILD_SCRIPT.relative_to(REPO_ROOT)} (it installs into ${CACHE_ENV} or "
            f"~/.cache/magicstick/toolchain/), or point ${env} at the binary."
        )
    return path


def kube_apiserver() -> Path:
    return tool("kube-apiserver", f"kube-apiserver-{versions().kube}", env="MAGICSTICK_KUBE_APISERVER")


def kube_controller_manager() -> Path:
    return tool(
        "kube-controller-manager", f"kube-apiserver-{versions().kube}", env="MAGICSTICK_KUBE_CONTROLLER_MANAGER"
    )


def kube_scheduler() -> Path:
    return tool("kube-scheduler", f"kube-apiserver-{versions().kube}", env="MAGICSTICK_KUBE_SCHEDULER")


def kube_proxy() -> Path:
    return tool("kube-proxy", f"kube-apiserver-{versions().kube}", env="MAGICSTICK_KUBE_PROXY")


def etcd() -> Path:
    return tool("etcd", f"etcd-{versions().etcd}", env="MAGICSTICK_ETCD")


def pulumi() -> Path:
    return tool("pulumi", f"pulumi-{versions().pulumi}", env="MAGICSTICK_PULUMI")


def kubernetes_provider() -> Path:
    return tool(
        "pulumi-resource-kubernetes",
        f"pulumi-resource-kubernetes-{versions().pulumi_kubernetes}",
        env="MAGICSTICK_PULUMI_RESOURCE_KUBERNETES",
    )


def egctl() -> Path:
    return tool("egctl", f"egctl-{versions().envoy_gateway}", env="MAGICSTICK_EGCTL")


def helm() -> Path:
    return tool("helm", f"helm-{versions().helm}", env="MAGICSTICK_HELM")


def flux() -> Path:
    return tool("flux", f"flux-{versions().flux}", env="MAGICSTICK_FLUX")


FLUX_CONTROLLERS: Final = ("source-controller", "kustomize-controller", "helm-controller")


def flux_controller(name: str) -> Path:
    """One of Flux's controllers (`FLUX_CONTROLLERS`), as `$MAGICSTICK_SOURCE_CONTROLLER` and so on."""
    if name not in FLUX_CONTROLLERS:
        raise ValueError(f"not one of Flux's controllers the toolchain builds: {name!r}")
    return tool(name, f"flux-controllers-{versions().flux}", env=f"MAGICSTICK_{name.upper().replace('-', '_')}")


def python_language_host() -> Path:
    """The Python language host beside `pulumi()`, where the CLI looks for it (no variable of its own)."""
    path = pulumi().parent / "pulumi-language-python"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ToolNotFound(
            f"pulumi-language-python not found beside {pulumi()}, where the CLI looks for it. Build the toolchain once with: "
            f"{BUILD_SCRIPT.relative_to(REPO_ROOT)} (where the Go module proxy refuses the language host, with "
            f"$MAGICSTICK_GO_SOURCES naming the folder of its source archive)."
        )
    return path


def kubelet() -> Path:
    return tool("kubelet", f"kube-apiserver-{versions().kube}", env="MAGICSTICK_KUBELET")


def coredns() -> Path:
    return tool("coredns", f"coredns-{versions().coredns}", env="MAGICSTICK_COREDNS")


def pko_manager() -> Path:
    """The Pulumi Kubernetes Operator's manager; the operator image (scripts/images/build.sh) holds it."""
    return tool("manager", f"pulumi-kubernetes-operator-{versions().pko}", env="MAGICSTICK_PKO_MANAGER")


def pko_agent() -> Path:
    """The agent the operator's workspace pods serve the program with; in the operator image too."""
    return tool("agent", f"pulumi-kubernetes-operator-{versions().pko}", env="MAGICSTICK_PKO_AGENT")


def kubeai() -> Path:
    """KubeAI's controller."""
    return tool("kubeai", f"kubeai-{versions().kubeai}", env="MAGICSTICK_KUBEAI")


def ollama() -> Path:
    """Ollama's server and CLI with its CPU engine, the engine of the Ollama model Pods."""
    return tool("ollama", f"ollama-{versions().ollama}", env="MAGICSTICK_OLLAMA")
