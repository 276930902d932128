"""The web UI end to end: `raf ui` as a program, driven in Debian's chromium by Playwright."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve.ui.browser import UiServer, screenshot

REPLIES = json.dumps(
    {
        "replies": [
            {"text": "Hello <b>there</b>, from a <script>x()</script> model.", "pace": 0.02}
        ]
        * 20,
        "chunkSize": 6,
    }
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    running = UiServer(tmp_path_factory.mktemp("ui"), REPLIES)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def open_chat(page: Any, server: UiServer, agent: str = "clerk") -> None:
    page.goto(f"{server.url}/ui#/chat/{agent}")
    page.wait_for_selector("body[data-ready=chat]")


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.click("#send")


def done(page: Any, text: str) -> None:
    """Wait for `text` to show and for the answer's stream to end."""
    page.wait_for_selector(f"text={text}")
    page.wait_for_selector(".msg.streaming", state="detached")


def session_id(page: Any) -> str:
    return str(page.evaluate("location.hash.split('/')[3]"))


def stored(server: UiServer, agent: str, sid: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{server.url}/agents/{agent}/sessions/{sid}").json()
    return data


def test_a_tool_call_needing_approval_is_approved_from_the_page(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    send(page, "note buy milk")
    approval = page.locator(".approval").last
    approval.wait_for()
    assert "write_note" in approval.inner_text()
    assert '"buy milk"' in approval.inner_text()
    assert page.locator(".card.tool .badge").first.inner_text() == "awaiting approval"
    approval.locator("button.approve").click()
    done(page, "Done: noted buy milk")
    assert approval.locator(".approval-result").inner_text() == "Approved"
    card = page.locator(".card.tool").last
    card.locator("summary").click()
    assert card.locator(".badge").inner_text() == "done"
    assert card.locator(".result").inner_text() == "noted buy milk"
    assert '"text": "buy milk"' in card.locator(".args").inner_text()
    assert card.locator(".duration").inner_text().endswith(" ms")
    assert (server.home / "notes.txt").read_text() == "buy milk\n"
    screenshot(page, "chat")


def test_a_denial_carries_its_reason_and_the_tool_does_not_run(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "note sell the car")
    approval = page.locator(".approval").last
    approval.wait_for()
    approval.locator("input").fill("not today")
    approval.locator("button.deny").click()
    done(page, "The tool failed")
    assert approval.locator(".approval-result").inner_text() == "Denied"
    notes = server.home / "notes.txt"
    assert "sell the car" not in (notes.read_text() if notes.exists() else "")
    done(page, "The tool failed: the user denied this call: not today")
    session = stored(server, "clerk", session_id(page))
    results = [
        c for m in session["messages"] for c in m["contents"] if c["type"] == "function_result"
    ]
    assert [r.get("error") for r in results] == ["the user denied this call: not today"]
    assert session["pending_approvals"] == []


def test_a_stale_approval_is_refused_with_a_message(browser: Any, server: UiServer) -> None:
    first = browser.new_page()
    second = browser.new_page()
    try:
        open_chat(first, server)
        send(first, "note call mum")
        first.locator(".approval").last.wait_for()
        second.goto(f"{server.url}/ui#/chat/clerk/{session_id(first)}")
        second.locator(".approval").last.wait_for()
        first.locator(".approval button.approve").last.click()
        done(first, "Done: noted call mum")
        second.locator(".approval button.approve").last.click()
        result = second.locator(".approval .approval-result").last
        result.wait_for()
        second.wait_for_function(
            "() => document.querySelector('.approval .approval-result').textContent.length > 0"
        )
        assert result.inner_text().startswith("Refused:")
        assert "not waiting for approval" in result.inner_text()
        assert (server.home / "notes.txt").read_text().count("call mum") == 1
    finally:
        first.close()
        second.close()


def test_a_failing_tool_shows_as_an_error_card(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "define missing")
    done(page, "The tool failed")
    card = page.locator(".card.tool.error")
    assert card.count() == 1
    assert card.locator(".badge").inner_text() == "error"
    assert "no such word" in card.locator(".result").text_content()


def test_html_in_model_output_and_tool_results_is_shown_as_text(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    send(page, "inject")
    done(page, "Here it is")
    send(page, "define spoon")
    done(page, "Done: spoon")
    transcript = page.locator("#transcript")
    text = transcript.inner_text()
    assert "<script>window.__pwned = 1</script>" in text
    assert text.count('<img src=x onerror="window.__pwned = 2">') == 2
    assert transcript.locator("script, img").count() == 0
    assert page.evaluate("window.__pwned") is None
    # the same output, reloaded from the stored session
    page.reload()
    done(page, "Here it is")
    assert page.locator("#transcript script, #transcript img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_reasoning_is_folded_away(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "think")
    done(page, "Both.")
    folded = page.locator(".msg.assistant details.reasoning").last
    assert folded.get_attribute("open") is None
    assert folded.inner_text().strip() == "Reasoning"  # only the summary shows
    folded.locator("summary").click()
    assert "first I weigh <b>both</b> options" in folded.inner_text()


def test_a_scripted_document_agent_streams_its_answer(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    page.select_option("#agent-picker", "helper")  # the picker opens a chat with it
    page.wait_for_function("() => location.hash === '#/chat/helper'")
    page.wait_for_selector("#prompt[placeholder='Message helper…']")
    page.evaluate(
        """() => { window.__pieces = 0;
        new MutationObserver((records) => { window.__pieces += records.length; })
          .observe(document.getElementById('transcript'),
                   {childList: true, subtree: true, characterData: true}); }"""
    )
    send(page, "hi")
    done(page, "model.")
    answer = page.locator(".msg.assistant .text").last.inner_text()
    assert answer == "Hello <b>there</b>, from a <script>x()</script> model."
    assert page.evaluate("window.__pieces") > 5  # arrived piece by piece, not at once
    assert page.locator(".msg.assistant b, .msg.assistant script").count() == 0


def test_a_stored_session_is_listed_replayed_exported_and_deleted(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    send(page, "note water the plants")
    page.locator(".approval button.approve").last.click()
    done(page, "Done: noted water the plants")
    sid = session_id(page)
    page.goto(f"{server.url}/ui#/sessions/clerk")
    page.wait_for_selector("body[data-ready=sessions]")
    row = page.locator(f"tr[data-session='{sid}']")
    assert "note water the plants" in row.inner_text()
    row.locator("button.replay").click()
    page.wait_for_selector("#replay[data-done=true]")
    replay = page.locator("#replay").inner_text()
    assert replay.index("note water the plants") < replay.index("Done: noted water the plants")
    assert page.locator("#replay-step").inner_text() == "4 / 4"
    # the tool's result is in its call's card, not in an empty message of its own
    card = page.locator("#replay .card.tool")
    assert card.locator(".result").text_content() == "noted water the plants"
    assert page.locator("#replay .msg[data-role=tool]").count() == 0
    screenshot(page, "sessions")
    with page.expect_download() as download:
        row.locator("button.export").click()
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["id"] == sid
    assert exported["messages"][0]["contents"][0]["text"] == "note water the plants"
    # opened from the list: the chat page shows the stored conversation
    row.locator("a.open").click()
    done(page, "Done: noted water the plants")
    assert page.locator("#session-label").inner_text() == f"Session {sid}"
    page.go_back()
    page.wait_for_selector(f"tr[data-session='{sid}']")
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button.delete").click()
    page.wait_for_selector(f"tr[data-session='{sid}']", state="detached")
    assert httpx.get(f"{server.url}/agents/clerk/sessions/{sid}").status_code == 404


def test_the_request_the_model_saw_is_shown_per_turn(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "define fork")
    done(page, "Done: fork")
    page.click("#requests-link")
    page.wait_for_selector("body[data-ready=requests]")
    requests = page.locator(".card.request")
    assert requests.count() == 2  # the call that asked for the tool, and the one after it
    last = requests.last
    system = last.locator(".system").inner_text()
    assert system.startswith("You keep notes for the user.")
    assert "greeting: How to greet people warmly." in system  # the skills provider's part
    assert "Persistent memory" in system  # the memory provider's part
    tools = last.locator(".tools > li").all_inner_texts()
    assert [t.split(" ")[0] for t in tools][:2] == ["write_note", "lookup"]
    assert "load_skill" in " ".join(tools)
    assert "input tokens" in last.locator("summary").first.inner_text()
    last.locator("details summary", has_text="Messages sent").click()
    sent = json.loads(last.locator(".messages").inner_text())
    assert [m["role"] for m in sent][-2:] == ["assistant", "tool"]
    screenshot(page, "requests")


def test_traces_show_the_span_tree_with_durations(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "define knife")
    done(page, "Done: knife")
    sid = session_id(page)
    page.goto(f"{server.url}/ui#/traces/clerk/{sid}")
    page.wait_for_selector("body[data-ready=traces]")
    kinds = page.locator(".trace .span-row").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert kinds == ["run", "model", "tool", "model"]
    names = page.locator(".trace .span-row").all_inner_texts()
    # the dev install has the otel extra: these are OpenTelemetry's GenAI spans
    assert page.locator("#trace-source").get_attribute("data-source") == "opentelemetry"
    assert names[0].strip().startswith("invoke_agent clerk")
    assert "execute_tool lookup" in names[2]
    assert all(n.strip().endswith(" ms") for n in names)
    bars = page.locator(".trace .span-row").evaluate_all(
        """rows => rows.map(r => { const bar = r.querySelector('.bar');
        return { id: r.dataset.id, parent: r.dataset.parent,
                 left: Number(bar.dataset.left), width: Number(bar.dataset.width) }; })"""
    )
    boxes = {bar["id"]: bar for bar in bars}
    for bar in bars:  # each bar inside its parent's, on the parent's time scale
        if bar["parent"]:
            parent = boxes[bar["parent"]]
            assert bar["left"] >= parent["left"] - 0.05
            assert bar["left"] + bar["width"] <= parent["left"] + parent["width"] + 0.05
    # and so on screen: a nested row's indent must not shift its bar past the parent's
    drawn = page.locator(".trace .span-row").evaluate_all(
        """rows => rows.map(r => { const box = r.querySelector('.bar').getBoundingClientRect();
        return { id: r.dataset.id, parent: r.dataset.parent,
                 left: box.left, right: box.right }; })"""
    )
    on_screen = {bar["id"]: bar for bar in drawn}
    for bar in drawn:
        if bar["parent"]:
            parent = on_screen[bar["parent"]]
            assert parent["left"] - 0.5 <= bar["left"] and bar["right"] <= parent["right"] + 0.5
    screenshot(page, "traces")


def test_memory_and_skills_are_browsable(page: Any, server: UiServer) -> None:
    page.goto(f"{server.url}/ui#/memory/clerk")
    page.wait_for_selector("body[data-ready=memory]")
    skill = page.locator(".card.skill")
    assert skill.count() == 1
    assert "greeting" in skill.inner_text()
    skill.locator("summary").click()
    assert "Say hello by name." in skill.inner_text()
    files = page.locator(".memory-file summary").all_inner_texts()
    assert files, "the super-brain folder's files are listed"
    screenshot(page, "memory")


def test_a_workflow_asks_a_person_and_is_answered_from_the_page(
    page: Any, server: UiServer
) -> None:
    page.goto(f"{server.url}/ui#/workflows/review")
    page.wait_for_selector("body[data-ready=workflows]")
    nodes = page.locator("svg.graph g[data-node]").evaluate_all(
        "nodes => nodes.map(n => n.dataset.node)"
    )
    assert nodes == ["draft", "review", "publish"]
    assert page.locator("svg.graph [data-edge='draft->review']").count() == 1
    page.evaluate(
        """() => { window.__active = [];
        const note = (g) => {
          if (!window.__active.includes(g.dataset.node)) window.__active.push(g.dataset.node);
        };
        new MutationObserver((records) => {
          for (const r of records) {
            if ((r.oldValue || '').split(' ').includes('active')) note(r.target);
            if (r.target.classList.contains('active')) note(r.target);
          }
        }).observe(document.querySelector('svg.graph'),
                   {attributes: true, attributeOldValue: true, subtree: true}); }"""
    )
    page.set_viewport_size({"width": 760, "height": 800})
    report = "the report " + "x" * 300  # one long word in every event
    page.fill("#wf-input", report)
    page.click("#wf-start")
    request = page.locator("#wf-requests .approval")
    request.wait_for()
    assert f"publish draft of {report}?" in request.inner_text()
    assert page.locator("#wf-superstep").inner_text() == "paused"
    assert page.locator("svg.graph g[data-node=review].done").count() == 1
    assert page.locator("svg.graph g[data-node=publish].done").count() == 0
    request.locator("input.answer").fill("yes please")
    request.locator("button.reply").click()
    page.wait_for_selector("body[data-workflow=completed]")
    assert (
        f"published: publish draft of {report}? -> yes please"
        in page.locator("#wf-events").inner_text()
    )
    assert page.locator("svg.graph g[data-node=publish].done").count() == 1
    # each superstep's nodes were highlighted while it ran, and none is once it is over
    assert page.evaluate("window.__active") == ["draft", "review", "publish"]
    assert page.locator("svg.graph g.active").count() == 0
    # long output and a graph wider than the window scroll in their boxes, not the page
    page.evaluate("document.querySelector('svg.graph').setAttribute('width', '2400')")
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    ), page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    screenshot(page, "workflows")


def test_a_checkpoint_is_resumed_from_the_page(page: Any, server: UiServer) -> None:
    page.goto(f"{server.url}/ui#/workflows/review")
    page.wait_for_selector("body[data-ready=workflows]")
    page.fill("#wf-input", "the memo")
    page.click("#wf-start")
    page.locator("#wf-requests .approval input.answer").fill("ok")
    page.locator("#wf-requests .approval button.reply").click()
    page.wait_for_selector("body[data-workflow=completed]")
    # the checkpoint taken after the answer, before publishing: resuming runs publish again
    page.locator(
        "#wf-checkpoints tr[data-status=running][data-superstep='3'] button.resume"
    ).first.click()
    page.wait_for_function(
        "() => document.querySelectorAll('#wf-events .output').length === 1 && "
        "document.body.dataset.workflow === 'completed' && "
        "document.querySelector('#wf-events .event').textContent === 'WorkflowStarted' && "
        # the log is the resumed run's: it starts after the review (superstep 3)
        "![...document.querySelectorAll('#wf-events .event')]"
        ".some(e => e.textContent.startsWith('NodeInvoked review'))"
    )
    assert page.locator("#wf-events .output").inner_text() == (
        "published: publish draft of the memo? -> ok"
    )
    events = page.locator("#wf-events .event").all_inner_texts()
    assert events[:3] == [
        "WorkflowStarted",
        "SuperstepStarted (superstep 4)",
        "NodeInvoked publish (superstep 4)",
    ]


def test_a_paused_checkpoint_is_answered_from_the_table(page: Any, server: UiServer) -> None:
    page.goto(f"{server.url}/ui#/workflows/review")
    page.wait_for_selector("body[data-ready=workflows]")
    page.fill("#wf-input", "the poem")
    page.click("#wf-start")
    page.wait_for_selector("body[data-workflow=paused]")
    page.reload()  # a fresh page knows the run only by its stored checkpoint
    page.wait_for_selector("body[data-ready=workflows]")
    assert page.locator("#wf-requests .approval").count() == 0
    page.locator("#wf-checkpoints tr[data-status=paused] button.answer-checkpoint").first.click()
    request = page.locator("#wf-requests .approval")
    assert "publish draft of the poem?" in request.inner_text()
    request.locator("input.answer").fill("later")
    request.locator("button.reply").click()
    page.wait_for_selector("body[data-workflow=completed]")
    assert page.locator("#wf-events .output").inner_text() == (
        "published: publish draft of the poem? -> later"
    )


def test_a_declarative_workflow_document_asks_and_is_answered(page: Any, server: UiServer) -> None:
    page.goto(f"{server.url}/ui#/workflows/survey")
    page.wait_for_selector("body[data-ready=workflows]")
    assert "Asks a name, then greets." in page.locator("main").inner_text()
    page.fill("#wf-input", "start")
    page.click("#wf-start")
    request = page.locator("#wf-requests .approval")
    request.wait_for()
    assert "Your name?" in request.inner_text()
    request.locator("input.answer").fill("Grace <i>Hopper</i>")
    request.locator("button.reply").click()
    page.wait_for_selector("body[data-workflow=completed]")
    assert page.locator("#wf-events .output").inner_text() == "Hi Grace <i>Hopper</i>."
    assert page.locator("#wf-events i").count() == 0
