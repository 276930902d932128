"""The shipped eval of small local models: a toolbox of six deterministic tools, the agent
that gets them, and the dataset (`datasets/local_models.yaml`) of questions for it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from raf.agent.agent import Agent
from raf.core.chat_client import ChatClient
from raf.core.function_tool import tool
from raf.core.options import ChatOptions
from raf.core.tools import Tool
from raf.evals.dataset import Dataset

INSTRUCTIONS = (
    "You are a helpful assistant. When one of the tools can answer, call it; when none "
    "fits, say briefly that you cannot do it. Answer in one short sentence."
)
DATASET_FILE = "local_models.yaml"

_WEATHER = {
    "oslo": "Snow, -3 C",
    "lima": "Foggy, 16 C",
    "paris": "Cloudy, 12 C",
    "cairo": "Sunny, 35 C",
    "tokyo": "Rain, 18 C",
    "sydney": "Sunny, 24 C",
    "toronto": "Windy, 5 C",
    "berlin": "Rain, 9 C",
    "madrid": "Sunny, 27 C",
    "nairobi": "Cloudy, 22 C",
}
_POPULATION = {
    "tokyo": "37 million",
    "lagos": "15 million",
    "paris": "11 million",
    "cairo": "22 million",
    "madrid": "7 million",
}
_TIME = {
    "sydney": "09:15",
    "toronto": "18:15",
    "nairobi": "01:15",
    "berlin": "00:15",
    "tokyo": "08:15",
    "paris": "00:15",
}
_RATES = {("usd", "eur"): 0.92, ("eur", "gbp"): 0.85, ("gbp", "usd"): 1.27, ("eur", "usd"): 1.09}


def _city(city: str) -> str:
    return city.strip().split(",")[0].strip().lower()


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"{_WEATHER.get(_city(city), 'Clear, 20 C')} in {city.strip()}"


@tool
def get_population(city: str) -> str:
    """Get how many people live in a city."""
    return f"{city.strip()} has {_POPULATION.get(_city(city), '1 million')} people"


@tool
def get_time(city: str) -> str:
    """Get the current local time in a city."""
    return f"It is {_TIME.get(_city(city), '12:00')} in {city.strip()}"


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email to an address with a subject."""
    return f"Email sent to {to} with subject {subject!r}"


@tool
def convert_currency(amount: float, from_currency: str, to: str) -> str:
    """Convert an amount of money from one currency (USD, EUR, GBP) to another."""
    rate = _RATES.get((from_currency.strip().lower(), to.strip().lower()), 1.0)
    return f"{amount:g} {from_currency.upper()} is {amount * rate:.2f} {to.upper()}"


TOOLS: list[Tool] = [
    get_weather,
    get_population,
    get_time,
    add,
    multiply,
    send_email,
    convert_currency,
]


def suite_agent(client: ChatClient, *, max_tokens: int = 128) -> Agent:
    """The agent the dataset is run on: the toolbox, short instructions, short answers."""
    return Agent(
        chat_client=client,
        instructions=INSTRUCTIONS,
        tools=TOOLS,
        name="local-suite",
        max_tool_rounds=4,
        default_options=ChatOptions(max_tokens=max_tokens),
    )


def dataset_path() -> Path:
    return Path(str(resources.files("raf.evals") / "datasets" / DATASET_FILE))


def suite_dataset() -> Dataset:
    """The shipped dataset of small-model cases."""
    return Dataset.from_file(dataset_path())
