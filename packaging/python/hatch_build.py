"""Hatchling build hook for the kernel-mcp wheels.

The wheel holds no Python: its one file is the kernel-mcp binary for one
platform, installed as a script, so pip and uv put the binary itself at
<env>/bin/kernel-mcp (Windows <env>\\Scripts\\kernel-mcp.exe). The release
build (go run ./internal/dist) runs hatchling once per platform with:

  KERNEL_MCP_WHEEL_BINARY  path of the built binary for that platform
  KERNEL_MCP_WHEEL_TAG     the wheel tag, e.g. py3-none-manylinux_2_17_x86_64

and SOURCE_DATE_EPOCH, which with reproducible = true fixes every entry's
timestamp.
"""

import os
import re

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TAG = re.compile(r"^py3-none-[a-z0-9_]+$")


class KernelMCPBinary(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            raise ValueError(f"kernel-mcp builds wheels only, not {self.target_name}")
        binary = os.environ.get("KERNEL_MCP_WHEEL_BINARY", "")
        tag = os.environ.get("KERNEL_MCP_WHEEL_TAG", "")
        if not binary or not os.path.isfile(binary):
            raise ValueError(
                f"KERNEL_MCP_WHEEL_BINARY must name the built kernel-mcp binary, not {binary!r}"
            )
        if not TAG.match(tag):
            raise ValueError(
                f"KERNEL_MCP_WHEEL_TAG must be a tag such as py3-none-manylinux_2_17_x86_64, not {tag!r}"
            )
        name = "kernel-mcp.exe" if tag.endswith(("win_amd64", "win_arm64")) else "kernel-mcp"
        build_data["tag"] = tag
        build_data["pure_python"] = False
        build_data["shared_scripts"][os.path.abspath(binary)] = name
