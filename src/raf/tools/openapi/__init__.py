"""HTTP APIs described by OpenAPI 3.0/3.1 as raf tools."""

from raf.tools.openapi.auth import ApiKeyAuth, Auth, BearerAuth, StaticBearerAuth
from raf.tools.openapi.loader import load_spec
from raf.tools.openapi.operation import OpenApiTool
from raf.tools.openapi.toolset import OpenApiToolset, openapi_tools

__all__ = [
    "ApiKeyAuth",
    "Auth",
    "BearerAuth",
    "OpenApiTool",
    "OpenApiToolset",
    "StaticBearerAuth",
    "load_spec",
    "openapi_tools",
]
