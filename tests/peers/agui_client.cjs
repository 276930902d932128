// Drives a raf AG-UI endpoint with the protocol's official client (@ag-ui/client) and
// prints what each run received as JSON: three runs on one thread (a tool call and
// streamed text, a run that stops for approval, the run that resumes with the answer).
// STATE (JSON) is the state the front end starts with; every warning the client prints
// (a state patch that does not apply, an event it cannot place) is kept with its run.
// Usage: node agui_client.cjs URL [TOKEN] [STATE]
const { HttpAgent } = require("@ag-ui/client");

const [url, token, initial] = process.argv.slice(2);
const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));
setTimeout(() => {
  console.error("timed out");
  process.exit(3);
}, 30000).unref();

const agent = new HttpAgent({
  url,
  threadId: "thread-1",
  initialState: initial ? JSON.parse(initial) : undefined,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});
const runs = [];

async function run(params) {
  const events = [];
  let failed = null;
  const subscriber = {
    onEvent({ event }) {
      events.push(event);
    },
    onRunFailed({ error }) {
      failed = String(error);
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (error) {
    failed = failed || String(error);
  }
  // copies: the agent keeps changing these objects in later runs
  runs.push(
    JSON.parse(
      JSON.stringify({
        events,
        failed,
        warnings: warnings.splice(0),
        pendingInterrupts: agent.pendingInterrupts,
        state: agent.state,
        messages: agent.messages,
      }),
    ),
  );
}

(async () => {
  agent.addMessage({ id: "u1", role: "user", content: "What is 2 + 3?" });
  await run({ runId: "run-1" });
  agent.addMessage({ id: "u2", role: "user", content: "Remove note 7." });
  await run({ runId: "run-2" });
  const resume = agent.pendingInterrupts.map((interrupt) => ({
    interruptId: interrupt.id,
    status: "resolved",
    payload: { approved: true },
  }));
  await run({ runId: "run-3", resume });
  process.stdout.write(JSON.stringify(runs));
})().catch((error) => {
  console.error(error);
  process.exit(2);
});
