//! A client no one at kernel-mcp wrote: the Rust MCP SDK (rmcp), speaking
//! protocol 2026-07-28 with the tasks extension (SEP-2663) declared. It
//! starts the server given on its command line over stdio, or connects to
//! one over streamable HTTP, and plays the scenarios of
//! integration/tasks_test.go, printing one JSON line per step for the test
//! to check:
//!
//!   tasks-rmcp /path/to/kernel-mcp [server flags...]
//!   tasks-rmcp http://127.0.0.1:PORT/mcp [bearer token]
//!
//! Steps: discover (the server's extensions), short (a short call returns
//! its result directly), long (a 20 s loop becomes a task, polled to its
//! end, and wait_run's result for the same run), input (input() answered
//! through tasks/update), cancel (tasks/cancel interrupts, the namespace is
//! kept). Any protocol failure ends it with a non-zero exit.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rmcp::{
    model::*,
    service::{ClientLifecycleMode, ClientServiceExt, RunningService},
    transport::{
        streamable_http_client::StreamableHttpClientTransportConfig, ConfigureCommandExt, StreamableHttpClientTransport,
        TokioChildProcess,
    },
    RoleClient,
};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ClientConfig>;

fn args(v: Value) -> JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

fn say(step: &str, v: Value) {
    println!("{}", json!({"step": step, "data": v}));
}

async fn call(client: &Client, tool: &str, arguments: Value) -> Result<CallToolResponse> {
    client
        .call_tool_once(CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments)))
        .await
        .with_context(|| format!("tools/call {tool}"))
}

async fn complete(client: &Client, tool: &str, arguments: Value) -> Result<CallToolResult> {
    match call(client, tool, arguments).await? {
        CallToolResponse::Complete(r) => Ok(r),
        other => bail!("{tool}: expected a result, got {other:?}"),
    }
}

async fn task_of(client: &Client, tool: &str, arguments: Value) -> Result<CreateTaskResult> {
    match call(client, tool, arguments).await? {
        CallToolResponse::Task(t) => Ok(t),
        other => bail!("{tool}: expected a task, got {other:?}"),
    }
}

/// Polls tasks/get at the task's interval until `done` says so.
async fn poll(client: &Client, id: &str, every: Option<u64>, done: impl Fn(&DetailedTask) -> bool) -> Result<DetailedTask> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut every = every.unwrap_or(500);
    loop {
        let got = client.peer().get_task(GetTaskParams::new(id.to_string())).await.context("tasks/get")?;
        if done(&got.task) {
            return Ok(got.task);
        }
        if Instant::now() > deadline {
            bail!("task {id} still {:?} after 120 s", got.task.task.status);
        }
        every = got.task.task.poll_interval_ms.unwrap_or(every);
        tokio::time::sleep(Duration::from_millis(every)).await;
    }
}

fn terminal(t: &DetailedTask) -> bool {
    t.task.status.is_terminal()
}

fn payload(t: &DetailedTask) -> Value {
    match &t.payload {
        TaskPayload::Completed { result } => json!({"status": "completed", "result": result}),
        TaskPayload::Failed { error } => json!({"status": "failed", "error": error}),
        TaskPayload::Cancelled => json!({"status": "cancelled", "message": t.task.status_message}),
        TaskPayload::InputRequired { input_requests } => json!({"status": "input_required", "keys": input_requests.keys().collect::<Vec<_>>()}),
        _ => json!({"status": format!("{:?}", t.task.status)}),
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut argv = std::env::args().skip(1);
    let server = argv.next().ok_or_else(|| anyhow!("usage: tasks-rmcp SERVER [FLAGS...] | tasks-rmcp URL [TOKEN]"))?;
    let flags: Vec<String> = argv.collect();
    // Declaring the extension: an empty object under its id.
    let mut caps = ClientCapabilities::default();
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
    caps.extensions = Some(extensions);
    let config = ClientConfig::new(caps, Implementation::new("tasks-rmcp", "0.1.0"));
    let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client: Client = if server.starts_with("http://") || server.starts_with("https://") {
        let mut http = StreamableHttpClientTransportConfig::with_uri(server.as_str());
        if let Some(token) = flags.first() {
            http = http.auth_header(token.as_str());
        }
        config.serve_with_lifecycle(StreamableHttpClientTransport::from_config(http), mode).await
    } else {
        let transport = TokioChildProcess::new(tokio::process::Command::new(&server).configure(|cmd| {
            cmd.args(&flags);
        }))?;
        config.serve_with_lifecycle(transport, mode).await
    }
    .context("server/discover")?;
    let info = client.peer_info().ok_or_else(|| anyhow!("no server info"))?;
    say("discover", json!({"protocol": info.protocol_version.to_string(), "extensions": info.capabilities.extensions}));

    // A short call (the kernel started first) returns its result directly.
    if let CallToolResponse::Task(t) = call(&client, "run_code", json!({"session_id": "rust", "code": "None"})).await? {
        poll(&client, &t.task.task_id, t.task.poll_interval_ms, terminal).await?; // a slow kernel start
    }
    let short = complete(&client, "run_code", json!({"session_id": "rust", "code": "6*7"})).await?;
    say("short", serde_json::to_value(&short)?);

    // A 20 s loop becomes a task, polled to its end.
    let code = "import time\nfor i in range(20):\n    print('epoch', i, flush=True)\n    time.sleep(1)\n'trained'";
    let created = task_of(&client, "run_code", json!({"session_id": "rust", "code": code})).await?;
    let id = created.task.task_id.clone();
    let done = poll(&client, &id, created.task.poll_interval_ms, terminal).await?;
    say("long", json!({"task_id": id, "ttl_ms": created.task.ttl_ms, "poll_interval_ms": created.task.poll_interval_ms, "final": payload(&done)}));
    let waited = complete(&client, "wait_run", json!({"session_id": "rust"})).await?;
    say("wait_run", serde_json::to_value(&waited)?);

    // input() answered through tasks/update.
    let created = task_of(&client, "run_code", json!({"session_id": "rust", "code": "name = input('Your name? ')\nprint('hello', name)"})).await?;
    let id = created.task.task_id.clone();
    let asking = poll(&client, &id, created.task.poll_interval_ms, |t| t.task.status == TaskStatus::InputRequired || terminal(t)).await?;
    let key = match &asking.payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned().ok_or_else(|| anyhow!("no input request"))?,
        _ => bail!("expected input_required, got {:?}", asking.task.status),
    };
    let mut answers = InputResponses::new();
    answers.insert(key, json!({"action": "accept", "content": {"answer": "Ada"}}));
    client.peer().update_task(UpdateTaskParams::new(id.clone(), answers)).await.context("tasks/update")?;
    let done = poll(&client, &id, created.task.poll_interval_ms, terminal).await?;
    say("input", payload(&done));

    // tasks/cancel interrupts the run; the namespace is kept.
    complete(&client, "run_code", json!({"session_id": "rust", "code": "kept = 41"})).await?;
    let created = task_of(&client, "run_code", json!({"session_id": "rust", "code": "import time\nwhile True: time.sleep(0.1)"})).await?;
    let id = created.task.task_id.clone();
    client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.context("tasks/cancel")?;
    let done = poll(&client, &id, created.task.poll_interval_ms, terminal).await?;
    let after = complete(&client, "run_code", json!({"session_id": "rust", "code": "kept + 1"})).await?;
    say("cancel", json!({"final": payload(&done), "after": after}));

    client.cancel().await?;
    Ok(())
}
