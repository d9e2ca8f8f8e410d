"""ferry as the file system, and the shell, of a deepagents agent.

    from deepagents import create_deep_agent
    from ferry_deepagents import FerryBackend, ferry_tools

    agent = create_deep_agent(
        model=...,
        backend=FerryBackend(url=FERRY_URL, token=AGENT_TOKEN),
        tools=ferry_tools(url=FERRY_URL, token=AGENT_TOKEN),
    )
"""

from ferry_deepagents._http import FerryError
from ferry_deepagents.backend import FerryBackend
from ferry_deepagents.tools import ferry_tools

__all__ = ["FerryBackend", "FerryError", "ferry_tools"]
__version__ = "0.1.0"
