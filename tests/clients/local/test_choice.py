"""The staged tool choice of the embedded model, without the model: the grammar drawn
from the live context (spans, numbers, candidates), which tools a question is about, and
what the answer is written from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from raf import WorkspaceContextProvider, WorkspaceScope, file_tools
from raf.clients.local.choice import (
    LiveContext,
    answer_messages,
    choice_schema,
    first_named,
    named_steps,
    numbers,
    plain,
    rank_by_meaning,
    relevant_tools,
    spans,
    tool_terms,
    tool_text,
)
from raf.clients.local.values import iso_dates, places_with_region
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage, Role
from raf.core.tools import argument_candidates
from raf.evals.local_suite import TOOLS, add, get_weather, multiply, send_email


def turn(question: str, *steps: tuple[str, dict[str, object], object]) -> list[ChatMessage]:
    """A conversation: the question, then each call with its result."""
    messages = [ChatMessage.system("Be brief."), ChatMessage.user(question)]
    for index, (name, arguments, result) in enumerate(steps):
        call = FunctionCallContent(call_id=f"c{index}", name=name, arguments=dict(arguments))
        messages.append(ChatMessage.assistant(calls=[call]))
        messages.append(
            ChatMessage(
                role=Role.TOOL,
                contents=[FunctionResultContent(call_id=f"c{index}", name=name, result=result)],
            )
        )
    return messages


def test_spans_leave_out_little_words_numbers_and_the_tools_own_words() -> None:
    found = spans(
        "Send an email to bob@example.com with the subject Lunch.",
        avoid=tool_terms(send_email),
    )
    assert found == ["bob@example.com", "Lunch"]
    assert "Berlin" in spans("Is it raining in Berlin right now?")
    assert spans("What is 9 times 8?", avoid={"time"}) == []


def test_numbers_are_read_once_and_whole_ones_as_int() -> None:
    assert numbers(["Add 17 and 25, then 17 again", "it is 5.0 or 2.5"]) == [17, 25, 5, 2.5]
    assert numbers(["room b12 and v2.1"]) == []


def test_a_free_text_argument_is_a_span_and_a_number_one_of_the_numbers_said() -> None:
    live = LiveContext(turn("What is the weather in Oslo?"))
    assert live.parameters(get_weather) == {
        "type": "object",
        "properties": {"city": {"enum": ["Oslo"]}},
        "required": ["city"],
        "additionalProperties": False,
    }
    live = LiveContext(turn("Add 17 and 25."))
    parameters = live.parameters(add)
    assert parameters is not None
    assert parameters["properties"] == {"a": {"enum": [17, 25]}, "b": {"enum": [17, 25]}}
    assert live.callable(parameters)


def test_a_tool_without_the_values_it_needs_is_not_callable() -> None:
    live = LiveContext(turn("How many days are in a week?"))
    parameters = live.parameters(add)
    assert parameters is not None and not live.callable(parameters)


def test_numbers_already_used_give_way_to_the_result() -> None:
    live = LiveContext(
        turn("Add 2 and 3, then multiply the result by 4.", ("add", {"a": 2, "b": 3}, 5.0))
    )
    parameters = live.parameters(multiply)
    assert parameters is not None
    assert parameters["properties"]["a"] == {"enum": [4, 5]}


def test_a_one_argument_call_is_not_offered_again_with_a_value_used() -> None:
    messages = turn("What is the weather in Oslo?", ("get_weather", {"city": "Oslo"}, "Snow"))
    live = LiveContext(messages)
    assert live.parameters(get_weather) is None
    assert live.repeats(
        FunctionCallContent(call_id="x", name="get_weather", arguments={"city": "Oslo"})
    )
    assert not live.repeats(
        FunctionCallContent(call_id="x", name="get_weather", arguments={"city": "Lima"})
    )


def test_workspace_tools_offer_the_paths_that_exist_and_may_be_read(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("milk\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.txt").write_text("k\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    scope = WorkspaceScope(tmp_path, policy="deny", rules=[{"path": "secrets/**", "read": "deny"}])
    workspace = WorkspaceContextProvider(scope)
    workspace.add_tools(file_tools())
    by_name = {t.name: argument_candidates(t) for t in workspace.tools}
    assert by_name["read_file"] == {"path": ["notes/todo.txt"]}
    assert by_name["list_files"] == {"path": [".", "notes", "secrets"]}  # .git: never
    assert by_name["write_file"] == {}  # a path to create is the model's own
    live = LiveContext(turn("Read notes/todo.txt"))
    read = next(t for t in workspace.tools if t.name == "read_file")
    parameters = live.parameters(read)
    assert parameters is not None
    assert parameters["properties"] == {"path": {"enum": ["notes/todo.txt"]}}
    # unscoped tools offer nothing: they act on the current directory under approval
    assert argument_candidates(file_tools()[0]) == {}


def test_the_tools_a_question_is_about() -> None:
    names = lambda question: [t.name for t in relevant_tools(TOOLS, question)]  # noqa: E731
    assert names("What is the weather in Oslo?") == ["get_weather"]
    assert names("How many people live in Tokyo?") == ["get_population"]
    assert names("Send an email to bob@example.com") == ["send_email"]
    assert names("What is the capital of France?") == []
    assert names("Book me a flight to Rome.") == []
    both = relevant_tools(TOOLS, "Add 2 and 3, then multiply the result by 4.")
    assert [t.name for t in first_named(both, "Add 2 and 3, then multiply the result by 4.")] == [
        "add"
    ]


def test_after_a_result_only_a_step_named_in_the_question_follows() -> None:
    question = "Check the weather in Berlin and email it to sam@example.com"
    relevant = relevant_tools(TOOLS, question)
    assert [t.name for t in named_steps(relevant, question, TOOLS)] == [
        "get_weather",
        "send_email",
    ]
    files = file_tools()
    question = "Which files are in the notes folder?"
    assert named_steps(relevant_tools(files, question), question, files) == []


def test_the_choice_schema_has_no_answer_branch_when_a_call_is_required() -> None:
    schema = choice_schema([(add, add.parameters)], may_answer=False)
    assert [b["properties"]["tool"]["const"] for b in schema["anyOf"]] == ["add"]
    schema = choice_schema([(add, add.parameters)], may_answer=True)
    assert schema["anyOf"][-1]["properties"] == {"answer": {"const": ""}}


def test_the_answer_reads_results_as_facts_without_rafs_notes() -> None:
    messages = turn(
        "What is the weather in Oslo?",
        (
            "get_weather",
            {"city": "Oslo"},
            "Snow, -3 C\n\n[stopped repeating: 'get_weather' was called 3 times in a row with "
            "the same arguments and returned the same result each time; tools are off for "
            "the rest of this turn: answer with what you have]",
        ),
    )
    out = answer_messages(messages)
    assert [m.role for m in out] == [Role.SYSTEM, Role.USER]
    assert out[-1].text == "Fact: Snow, -3 C\n\nWhat is the weather in Oslo?"
    assert "tools are off" not in out[-1].text
    skipped = turn("Hi", ("add", {"a": 1, "b": 2}, None))
    skipped[-1] = ChatMessage(
        role=Role.TOOL,
        contents=[FunctionResultContent(call_id="c0", name="add", error="not run: limit")],
    )
    assert answer_messages(skipped)[-1].text == "Hi"


def test_results_become_words() -> None:
    listing = {"path": "notes", "entries": [{"name": "todo.txt", "type": "file", "size": 5}]}
    assert plain(listing) == "path: notes; entries: todo.txt (file, 5)"
    assert plain('{"content": "milk"}') == "content: milk"
    assert plain(20.0) == "20"
    assert plain("{not json") == "{not json"


def test_a_long_message_leaves_free_text_free() -> None:
    question = "Weather please " + " ".join(f"word{i}" for i in range(120)) + " in Oslo"
    live = LiveContext(turn(question))
    parameters = live.parameters(get_weather)
    assert parameters is not None
    assert parameters["properties"]["city"] == {"type": "string"}
    assert live.callable(parameters)


class Listing:
    """A tool-like object whose candidates are broken or odd."""

    def __init__(self, found: object) -> None:
        self.found = found

    def argument_candidates(self) -> object:
        if isinstance(self.found, Exception):
            raise self.found
        return self.found


def test_candidates_that_fail_or_are_odd_constrain_nothing() -> None:
    assert argument_candidates(Listing(OSError("gone"))) == {}
    assert argument_candidates(Listing(["not", "a", "mapping"])) == {}
    assert argument_candidates(Listing({"path": [], "mode": "r", "n": (1, 2)})) == {"n": [1, 2]}
    assert argument_candidates(object()) == {}


def test_the_lists_of_numbers_a_message_writes_keep_their_order_and_repeats() -> None:
    from raf.clients.local.choice import written_lists

    assert written_lists("T-test of [3, 4, 5, 6, 4] and [7, 8, 9, 8, 7], alpha 0.05") == [
        [3, 4, 5, 6, 4],
        [7, 8, 9, 8, 7],
        [0.05],
    ]
    assert written_lists("Cash flows of -$100, $40 and $60 at 8%") == [[100, 40, 60], [8]]
    tool: Any = _declared(
        "npv", {"flows": {"type": "array", "items": {"type": "float"}}}, ["flows"]
    )
    parameters = LiveContext(turn("NPV of 40%, 60% and 5 over 3 years?")).parameters(tool)
    assert parameters is not None  # percentages in a list of fractions are fractions
    assert parameters["properties"]["flows"] == {"type": "array", "enum": [[0.4, 0.6, 5]]}
    single = LiveContext(turn("NPV of 40% over 3 years?")).parameters(tool)
    assert single is not None  # no list written: each number alone is one
    assert single["properties"]["flows"] == {"type": "array", "enum": [[0.4], [3]]}


def test_numbers_written_with_thousands_separators_are_whole() -> None:
    assert numbers(["travels 12,000 miles at 25 MPG, list [3, 4, 5]"]) == [12000, 25, 3, 4, 5]
    assert numbers(["a base of 6cm and 1.5kg, not x2 or v1_0"]) == [6, 1.5]


def _declared(name: str, properties: dict[str, object], required: list[str]) -> object:
    from raf.evals.bfcl.data import DeclaredTool

    return DeclaredTool(
        {
            "name": name,
            "description": name,
            "parameters": {"type": "dict", "properties": properties, "required": required},
        }
    )


def test_an_optional_argument_the_message_speaks_of_is_offered() -> None:
    tool: Any = _declared(
        "run_ttest",
        {
            "group1": {"type": "array", "items": {"type": "integer"}},
            "equal_variance": {"type": "boolean"},
            "diet": {"type": "array", "items": {"type": "string", "enum": ["Vegan", "Halal"]}},
            "platform": {"type": "string", "enum": ["Switch", "PC"]},
            "unit": {"type": "string"},
            "weight": {"type": "number"},
            "alpha": {"type": "number"},
        },
        ["group1"],
    )
    said = LiveContext(
        turn("T-test of [1, 2] and [3, 4] assuming equal variance, weight 0.5, vegan, on PC")
    )
    parameters = said.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["equal_variance"] == {"type": "boolean"}
    assert parameters["properties"]["diet"] == {
        "type": "array",
        "items": {"enum": ["Vegan"]},
        "minItems": 1,
        "maxItems": 1,
    }
    # a required list of numbers is one of the lists the message writes
    assert parameters["properties"]["group1"] == {"type": "array", "enum": [[1, 2], [3, 4]]}
    assert parameters["properties"]["platform"] == {"enum": ["PC"]}
    assert parameters["properties"]["weight"] == {"enum": [0.5]}
    assert "unit" not in parameters["properties"]  # not spoken of: its default holds
    assert "alpha" not in parameters["properties"]
    spoken = LiveContext(turn("Speed of light is what? The distance is 4 years")).parameters(
        _declared("travel", {"speed": {"type": "number"}}, [])  # type: ignore[arg-type]
    )
    assert spoken is not None
    assert "speed" not in spoken["properties"]  # named, but no number said for it
    silent = LiveContext(turn("T-test of [1, 2] and [3, 4]")).parameters(tool)
    assert silent is not None
    assert set(silent["properties"]) == {"group1"}


def test_values_a_description_names_are_the_ones_offered_when_the_message_says_one() -> None:
    tool: Any = _declared(
        "emissions",
        {
            "vehicle": {"type": "string", "description": "'gas' or 'diesel' (a gas car)."},
            "unit": {"type": "string", "enum": ["meter", "feet"]},
            "diet": {
                "type": "array",
                "items": {"type": "string"},
                "description": "e.g. vegan, halal.",
            },
            "room": {"type": "string", "description": "Options: single, double, etc."},
        },
        ["vehicle", "unit"],
    )
    parameters = LiveContext(turn("A gas-powered car, in feet, vegan food, one room")).parameters(
        tool
    )
    assert parameters is not None
    properties = parameters["properties"]
    assert properties["vehicle"] == {"enum": ["gas"]}  # not the span "gas-powered car"
    assert properties["unit"] == {"enum": ["feet"]}  # a required choice: the value said
    assert properties["diet"] == {
        "type": "array",
        "items": {"enum": ["vegan"]},
        "minItems": 1,
        "maxItems": 1,
    }
    assert "room" not in properties  # optional, and no value of it said
    silent = LiveContext(turn("A blue car in Oslo")).parameters(tool)
    assert silent is not None
    assert silent["properties"]["unit"] == {"type": "string", "enum": ["meter", "feet"]}
    assert "Oslo" in silent["properties"]["vehicle"]["enum"]  # nothing described: spans


def test_described_values_and_where_the_message_says_them() -> None:
    from raf.clients.local.values import described_values, says

    assert described_values({"description": "The player's name, 'John' or \"Mike\"."}) == [
        "John",
        "Mike",
    ]
    assert described_values({"description": "Special diets, e.g. vegan, gluten-free. Default"}) == [
        "vegan",
        "gluten-free",
    ]
    assert described_values({"description": "One of: low, medium or high; more"}) == [
        "low",
        "medium",
        "high",
    ]
    assert described_values({"description": "The name of the player."}) == []
    assert says("a pet friendly hotel", "pet_friendly")
    assert says("a gas-powered car", "gas")
    assert not says("a gasoline car", "gas")


def test_a_percentage_is_a_fraction_unless_the_argument_is_in_percent() -> None:
    tool: Any = _declared(
        "grow",
        {
            "rate": {"type": "number", "description": "The annual interest rate."},
            "yield_pct": {"type": "number", "description": "The yield as a percentage."},
            "share": {"type": "integer", "description": "The share."},
            "decimal": {"type": "number", "description": "Enter as a decimal: 5% is 0.05."},
        },
        ["rate", "yield_pct", "share", "decimal"],
    )
    parameters = LiveContext(turn("Grow 1000 at 3% for 2 years")).parameters(tool)
    assert parameters is not None
    properties = parameters["properties"]
    assert properties["rate"] == {"enum": [1000, 0.03, 2]}
    assert properties["yield_pct"] == {"enum": [1000, 3, 2]}
    assert properties["share"] == {"enum": [1000, 3, 2]}
    assert properties["decimal"] == {"enum": [1000, 0.03, 2]}


def test_an_optional_number_is_the_one_said_beside_the_last_word_of_its_name() -> None:
    tool: Any = _declared(
        "recipe",
        {
            "name": {"type": "string"},
            "maxCalories": {"type": "integer"},
            "efficiency_reduction": {"type": "integer"},
            "fuel_efficiency": {"type": "number"},
        },
        ["name"],
    )
    live = LiveContext(turn("Pasta under 500 calories, fuel efficiency of 25 MPG"))
    parameters = live.parameters(tool)
    assert parameters is not None
    properties = parameters["properties"]
    assert properties["maxCalories"] == {"enum": [500]}  # "500 calories": before the word
    assert properties["fuel_efficiency"] == {"enum": [25]}
    assert "efficiency_reduction" not in properties  # "reduction" is not said
    light: Any = _declared("travel", {"speed_of_light": {"type": "number"}}, [])
    far = LiveContext(turn("Time for light from a star 4 light years away?")).parameters(light)
    assert far is not None
    assert far["properties"] == {}  # a speed of light is a speed: none is said


def test_spans_keep_proper_names_whole_and_drop_the_possessive() -> None:
    found = spans("Where is The Weeknd's concert?", avoid={"concert"})
    assert "The Weeknd" in found and "Weeknd's" not in found
    assert "the concert" not in [f.lower() for f in found]
    park = spans("Area of Yellowstone National Park?", avoid={"park"})
    assert "Yellowstone National Park" in park
    assert "area of Yellowstone National" in park or "Yellowstone National" in park
    assert "Park" not in park  # the tool's own word alone is still no value
    # a measure is no part of a name: "ice", never "1kg ice"; an ordinal date stays
    measured = spans("Heat a 1kg ice block from 0°C on March 10th")
    assert "ice" in measured and "March 10th" in measured
    assert not any(s.startswith(("1kg", "0°C")) for s in measured)


def test_one_value_for_two_text_arguments_is_no_call() -> None:
    tool: Any = _declared(
        "sculpture",
        {"design": {"type": "string"}, "size": {"type": "string"}, "count": {"type": "integer"}},
        ["design", "size"],
    )
    live = LiveContext(turn("What rock suits a garden sculpture?"))
    same = FunctionCallContent(
        call_id="c", name="sculpture", arguments={"design": "rock", "size": "Rock"}
    )
    apart = FunctionCallContent(
        call_id="c", name="sculpture", arguments={"design": "rock", "size": "garden", "count": 2}
    )
    assert live.confused(same, tool)
    assert not live.confused(apart, tool)


def test_a_path_the_user_names_is_the_file_that_exists(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    for name in ("todo.md", "groceries.txt", "agent.yaml"):
        (tmp_path / "notes" / name).write_text("x\n")
    workspace = WorkspaceContextProvider(WorkspaceScope(tmp_path, policy="deny"))
    workspace.add_tools(file_tools())
    read = next(t for t in workspace.tools if t.name == "read_file")

    def offered(question: str) -> object:
        parameters = LiveContext(turn(question)).parameters(read)
        assert parameters is not None
        return parameters["properties"]["path"]["enum"]

    assert offered("What does todo.md say is first?") == ["notes/todo.md"]
    assert offered("Is there a note about groceries?") == ["notes/groceries.txt"]
    assert offered("Read the first note") == [
        "notes/agent.yaml",
        "notes/groceries.txt",
        "notes/todo.md",
    ]


def test_tools_are_ranked_by_meaning_and_none_is_close_enough_for_some_questions() -> None:
    weather, population, adder = TOOLS[0], TOOLS[1], TOOLS[3]
    assert tool_text(weather).startswith("get weather: Get the current weather in a city.")
    assert "city" in tool_text(weather)
    tools = [weather, population, adder]
    ranked = rank_by_meaning(tools, "Is it raining in Oslo?", [0.62, 0.35, 0.05])
    assert ranked == [weather]
    near = rank_by_meaning(tools, "Oslo?", [0.50, 0.47, 0.05])
    assert near == [weather, population]  # too close to tell apart: the model chooses
    # a word of one tool's name in the question names it, however close the others are
    assert rank_by_meaning(tools, "Population or weather of Oslo?", [0.5, 0.46, 0.05]) == [
        weather,
        population,
    ]
    named = {"get_weather", "get_population"}
    asked = rank_by_meaning(tools, "Oslo's population?", [0.5, 0.2, 0.0], named=named)
    assert asked == [population]
    assert rank_by_meaning(tools, "Who wrote Hamlet?", [0.21, 0.18, 0.1]) == []
    assert rank_by_meaning(tools, "Who wrote Hamlet?", [0.21, 0.18, 0.1], threshold=0.2) == [
        weather
    ]


def test_the_client_ranks_by_its_embedder_and_embeds_each_tool_once() -> None:
    import asyncio

    from raf.clients.local.client import LocalChatClient

    axes = {"weather": 0, "rain": 0, "people": 1, "live": 1, "add": 2}
    seen: list[str] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        """A toy embedder: a vector per text of its words on three axes, unit length."""
        seen.extend(texts)
        out = []
        for text in texts:
            vector = [0.0, 0.0, 0.0]
            for word in text.lower().replace("?", " ").split():
                if word in axes:
                    vector[axes[word]] += 1.0
            norm = sum(v * v for v in vector) ** 0.5 or 1.0
            out.append([v / norm for v in vector])
        return out

    client = LocalChatClient("/nonexistent.gguf", embedder=embed, auto_pull=False)
    tools = list(TOOLS[:4])
    ranked = asyncio.run(client._relevant(tools, "Will rain fall in Oslo?"))
    assert [t.name for t in ranked] == ["get_weather"]
    assert asyncio.run(client._relevant(tools, "Who wrote Hamlet?")) == []
    assert len(seen) == 1 + 4 + 1  # the tools were embedded once, each question once
    words = LocalChatClient("/nonexistent.gguf", embedder=None, auto_pull=False)
    assert [t.name for t in asyncio.run(words._relevant(tools, "Weather in Oslo?"))] == [
        "get_weather"
    ]


def test_a_file_to_create_is_the_one_named_and_its_tools_act_on_it(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("x\n")
    workspace = WorkspaceContextProvider(WorkspaceScope(tmp_path, policy="deny"))
    workspace.add_tools(file_tools())
    tools = {t.name: t for t in workspace.tools}
    known = [v for t in workspace.tools for vs in argument_candidates(t).values() for v in vs]
    create = LiveContext(turn("Create a file called hello.txt saying hi"), known=known)
    assert create.file_names() == ["hello.txt"]
    assert create.acts_on_named(tools["write_file"])
    assert not create.acts_on_named(tools["read_file"])  # hello.txt is no existing file
    assert not create.acts_on_named(tools["make_directory"])  # a file name is no folder
    parameters = create.parameters(tools["write_file"])
    assert parameters is not None
    assert parameters["properties"]["path"] == {"enum": ["hello.txt"]}
    assert "hi" in parameters["properties"]["content"]["enum"]
    # a name that exists is that file, for writing as for reading
    edit = LiveContext(turn("Add a line to todo.md"), known=known)
    assert edit.file_names() == ["notes/todo.md"]
    assert edit.acts_on_named(tools["read_file"])
    assert not edit.acts_on_named(tools["write_file"])
    written = edit.parameters(tools["write_file"])
    assert written is not None
    assert written["properties"]["path"] == {"enum": ["notes/todo.md"]}


@pytest.mark.slow
def test_the_least_similarity_leaves_most_irrelevant_questions_without_a_call() -> None:
    """The threshold as measured: with the local embedder, at least 85 % of BFCL's
    `irrelevance` questions reach no tool (too far in meaning, or nothing to call it
    with), while most `simple_python` questions still reach theirs."""
    from raf.clients.local.choice import MIN_SIMILARITY
    from raf.clients.local.embedder import default_embedder
    from raf.evals.bfcl import DeclaredTool, evenly_spaced, load

    irrelevant = load("irrelevance")
    simple = evenly_spaced(load("simple_python"), 100)
    # every question and tool text embedded in one call (batched by length), not one call
    # per question: the same vectors, a third less time
    texts = dict.fromkeys(
        text
        for item in [*irrelevant, *simple]
        for text in [item.question, *(tool_text(DeclaredTool(f)) for f in item.functions)]
    )
    vector = dict(zip(texts, default_embedder()(list(texts)), strict=True))

    def reaches(question: str, tools: list[Any]) -> bool:
        asked = vector[question]
        scores = [
            sum(a * b for a, b in zip(asked, vector[tool_text(t)], strict=True)) for t in tools
        ]
        ranked = rank_by_meaning(tools, question, scores, threshold=MIN_SIMILARITY)
        live = LiveContext([ChatMessage.user(question)])
        parameters = live.parameters(ranked[0]) if ranked else None
        return parameters is not None and live.callable(parameters)

    called = sum(reaches(i.question, [DeclaredTool(f) for f in i.functions]) for i in irrelevant)
    assert 1 - called / len(irrelevant) >= 0.85
    reached = sum(reaches(i.question, [DeclaredTool(f) for f in i.functions]) for i in simple)
    assert reached / len(simple) >= 0.85


def test_a_count_written_as_a_word_is_a_number_the_call_may_take() -> None:
    assert numbers(["a six on a six-sided die twice in a row"], words=True) == [6, 2]
    assert numbers(["Roll 3 dice, one at a time, twice"], words=True) == [3, 2]
    assert numbers(["a six on a die twice"]) == []  # results keep digits only
    tool: Any = _declared(
        "dice_roll",
        {"desired_number": {"type": "integer"}, "number_of_rolls": {"type": "integer"}},
        ["desired_number", "number_of_rolls"],
    )
    live = LiveContext(turn("What's the probability of rolling a six twice in a row?"))
    parameters = live.parameters(tool)
    assert parameters is not None and live.callable(parameters)
    assert parameters["properties"]["number_of_rolls"] == {"enum": [6, 2]}


def test_a_range_the_message_writes_is_a_list_of_its_two_ends() -> None:
    from raf.clients.local.choice import written_lists

    assert written_lists("cases in the past 5 years from 2015 to 2021") == [[5], [2015, 2021]]
    assert written_lists("the area under y=x^2 from x=1 to x=3") == [[2], [1, 3]]
    assert written_lists("between x = -1 and x = 2") == [[-1, 2]]
    tool: Any = _declared(
        "case_search",
        {"year_range": {"type": "array", "items": {"type": "integer"}}},
        ["year_range"],
    )
    live = LiveContext(turn("Find cases from the past 5 years, from 2015 to 2021."))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["year_range"] == {"type": "array", "enum": [[2015, 2021]]}


def test_how_often_a_year_said_as_a_word_is_the_count_of_times_per_year() -> None:
    tool: Any = _declared(
        "future_value",
        {
            "present_value": {"type": "integer"},
            "years": {"type": "integer", "description": "The horizon in years."},
            "periods": {
                "type": "integer",
                "description": "The number of times that interest is compounded per year.",
            },
        },
        ["present_value", "years"],
    )
    live = LiveContext(turn("Future value of $5000 in 3 years with monthly compounding?"))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["periods"] == {"enum": [12]}
    assert parameters["properties"]["years"] == {"enum": [5000, 3]}
    plain = LiveContext(turn("Future value of $5000 in 3 years?")).parameters(tool)
    assert plain is not None and "periods" not in plain["properties"]  # its default holds


def test_days_said_in_weeks_are_the_days_of_an_argument_counted_in_days() -> None:
    tool: Any = _declared(
        "releases",
        {
            "location": {"type": "string"},
            "timeframe": {"type": "integer", "description": "The number of days ahead."},
        },
        ["location", "timeframe"],
    )
    live = LiveContext(turn("List the IMAX releases near LA for the next week."))
    parameters = live.parameters(tool)
    assert parameters is not None and live.callable(parameters)
    assert parameters["properties"]["timeframe"] == {"enum": [7]}
    two = LiveContext(turn("Releases near LA over the next 2 weeks")).parameters(tool)
    assert two is not None and two["properties"]["timeframe"] == {"enum": [14]}
    said = LiveContext(turn("Releases near LA for 3 days this week")).parameters(tool)
    assert said is not None and said["properties"]["timeframe"] == {"enum": [3]}


def test_a_date_said_in_words_is_the_iso_date_an_argument_asks_for() -> None:
    assert iso_dates("on March 8th, 2023 or the 5th of march 2023, not Feb 30, 2023") == [
        "2023-03-08",
        "2023-03-05",
    ]
    assert iso_dates("next Friday") == []  # no whole date written: nothing to offer
    tool: Any = _declared(
        "forecast",
        {
            "city": {"type": "string", "description": "The name of the city."},
            "date": {
                "type": "string",
                "description": "The date, in the format of 'YYYY-MM-DD'. Default: today.",
            },
        },
        ["city"],
    )
    live = LiveContext(turn("The weather forecast for New York on March 8th, 2023?"))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["date"] == {"enum": ["2023-03-08"]}  # optional, yet said
    today = LiveContext(turn("The weather forecast for New York?")).parameters(tool)
    assert today is not None and "date" not in today["properties"]  # its default holds


def test_a_place_with_its_region_is_offered_as_written_where_the_form_asks_for_it() -> None:
    form = "in the format of 'City, State', such as 'San Francisco, CA'"
    tool: Any = _declared(
        "get_current_weather",
        {"location": {"type": "string", "description": f"The location, {form}."}},
        ["location"],
    )
    live = LiveContext(turn("I'm off to New York, NY in December. How warm is it there?"))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["location"] == {"enum": ["New York, NY"]}
    # without the form in the description, the place stays one of the message's spans
    plain: Any = _declared("weather", {"location": {"type": "string"}}, ["location"])
    spans_only = live.parameters(plain)
    assert spans_only is not None
    assert "New York, NY" not in spans_only["properties"]["location"]["enum"]
    assert places_with_region("in Paris, France?", {"type": "string"}) == []


def test_a_date_written_short_is_the_iso_date_too() -> None:
    assert iso_dates("this weekend, Jun.20,2023, or Jun. 4 2022, or 1st June 2022") == [
        "2023-06-20",
        "2022-06-04",
        "2022-06-01",
    ]
    assert iso_dates("March 202023") == []  # no day and year apart


def test_a_time_of_day_is_offered_to_an_argument_named_time() -> None:
    from raf.clients.local.values import asks_for_time, clock_times

    assert clock_times("at 12pm. Or 3:30 PM, 7 a.m., 15:45, 10:00am") == [
        "12pm",
        "3:30 PM",
        "7 a.m.",
        "15:45",
        "10:00am",
    ]
    assert clock_times("a ratio of 2:1, 7.5 kg, at 25:10") == []
    assert asks_for_time("time", {"type": "string"})
    assert asks_for_time("startTime", {"type": "string"})
    assert not asks_for_time("timezone", {"type": "string"})
    assert not asks_for_time("time", {"type": "string", "enum": ["now", "later"]})
    tool: Any = _declared(
        "get_air_quality_index",
        {
            "location": {"type": "string", "description": "The location."},
            "time": {"type": "string", "description": "The time. Default is now."},
        },
        ["location", "time"],
    )
    parameters = LiveContext(turn("Find the air quality index in San Diego at 12pm.")).parameters(
        tool
    )
    assert parameters is not None
    assert parameters["properties"]["time"] == {"enum": ["12pm"]}
    assert "San Diego" in parameters["properties"]["location"]["enum"]


def test_a_unit_argument_takes_the_unit_written_after_a_number() -> None:
    from raf.clients.local.values import asks_for_unit, units_written

    assert units_written("a radius of 4 inches, 2mm voxels, 10 kg, 3 times, 5 of them") == [
        "inches",
        "mm",
        "kg",
    ]
    assert asks_for_unit("unit", {"type": "string"})
    assert asks_for_unit("lengthUnit", {"type": "string"})
    assert not asks_for_unit("units_sold", {"type": "integer"})
    tool: Any = _declared(
        "calculate_circumference",
        {
            "radius": {"type": "integer", "description": "The radius."},
            "unit": {"type": "string", "description": "The unit of measurement. Default 'cm'."},
        },
        ["radius"],
    )
    live = LiveContext(turn("The circumference of a circle with a radius of 4 inches?"))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["unit"] == {"enum": ["inches"]}
    said = LiveContext(turn("A radius of 4 cm, please")).parameters(tool)
    assert said is not None and said["properties"]["unit"] == {"enum": ["cm"]}  # as described
    bare = LiveContext(turn("The circumference for radius 4?")).parameters(tool)
    assert bare is not None and "unit" not in bare["properties"]  # its default holds


def test_an_abbreviated_name_is_named_by_the_word_its_description_spells_out() -> None:
    tool: Any = _declared(
        "soccer_get_last_match",
        {
            "team_name": {"type": "string", "description": "The name of the soccer club."},
            "include_stats": {
                "type": "boolean",
                "description": "If true, include match statistics like possession.",
            },
            "include_lineup": {"type": "boolean", "description": "If true, the lineup."},
        },
        ["team_name"],
    )
    live = LiveContext(turn("The last game played by Liverpool F.C. Include its statistics."))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["include_stats"] == {"type": "boolean"}
    assert "include_lineup" not in parameters["properties"]
    # a word that begins like the name but that the description does not use names nothing
    station: Any = _declared(
        "weather",
        {"stats": {"type": "boolean", "description": "If true, the averages."}},
        [],
    )
    silent = LiveContext(turn("Weather at the station today")).parameters(station)
    assert silent is not None and "stats" not in silent["properties"]


def test_a_number_written_with_its_unit_beside_the_name_is_its_value() -> None:
    tool: Any = _declared(
        "fmri_analyze",
        {
            "smooth": {"type": "integer", "description": "Spatial smoothing in mm."},
            "voxel_size": {"type": "integer", "description": "Size of voxels in mm."},
        },
        ["smooth"],
    )
    live = LiveContext(turn("Smoothed at 6mm with an isotropic voxel size of 2mm"))
    parameters = live.parameters(tool)
    assert parameters is not None
    assert parameters["properties"]["voxel_size"] == {"enum": [2]}


def test_a_span_that_says_an_arguments_head_word_is_that_arguments_alone() -> None:
    tool: Any = _declared(
        "sports_team_get_schedule",
        {
            "team_name": {"type": "string", "description": "The name of the team."},
            "num_of_games": {"type": "integer", "description": "Number of games."},
            "league": {"type": "string", "description": "The name of the league."},
        },
        ["team_name", "num_of_games", "league"],
    )
    live = LiveContext(
        turn("Give me the schedule of Manchester United for the next 6 games in Premier League.")
    )
    parameters = live.parameters(tool)
    assert parameters is not None
    leagues = parameters["properties"]["league"]["enum"]
    teams = parameters["properties"]["team_name"]["enum"]
    assert "Premier League" in leagues and all("League" in s for s in leagues)
    assert "Manchester United" in teams and not any("League" in s for s in teams)
    # a word of the name before the value is no name: "the company Google" claims nothing
    suits: Any = _declared(
        "lawsuits_search",
        {"company_name": {"type": "string"}, "location": {"type": "string"}},
        ["company_name", "location"],
    )
    found = LiveContext(turn("Lawsuits against the company Google in California")).parameters(suits)
    assert found is not None
    assert found["properties"]["company_name"] == found["properties"]["location"]


def test_values_listed_after_like_are_described_values() -> None:
    from raf.clients.local.values import described_values

    assert described_values(
        {"description": "Preferred diet like vegan, vegetarian, gluten-free etc. Default none."}
    ) == ["vegan", "vegetarian", "gluten-free"]
    assert described_values({"description": "Most likely the name of a city."}) == []
